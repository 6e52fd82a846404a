"""The engine: the pure promotion rules, ``decide(snapshot) -> Decision``."""

from promoter.engine.actions import (
    GATES_KEY,
    HOLD_KEY,
    PREVIOUS_ENVIRONMENT_KEY,
    Action,
    ClosePullRequest,
    Decision,
    EnvironmentVerdict,
    EnvState,
    GateVerdict,
    MergeActiveIntoProposed,
    MergePullRequest,
    OpenPullRequest,
    RecordHealthy,
    SetCommitStatus,
    UpdatePullRequest,
)
from promoter.engine.decide import decide
from promoter.engine.gates import BUILTIN_GATES, Gate, effective_active_dry_sha, gates_for
from promoter.engine.ledger_changes import LedgerAction, LedgerChanges, RevertOpened, ledger_changes
from promoter.engine.ledger_state import HealthyRecord
from promoter.engine.pr_text import PullRequestText, read_metadata
from promoter.engine.snapshot import CommitState, EnvironmentSnapshot, Snapshot

__all__ = [
    "BUILTIN_GATES",
    "GATES_KEY",
    "HOLD_KEY",
    "PREVIOUS_ENVIRONMENT_KEY",
    "Action",
    "ClosePullRequest",
    "CommitState",
    "Decision",
    "EnvState",
    "EnvironmentSnapshot",
    "EnvironmentVerdict",
    "Gate",
    "GateVerdict",
    "HealthyRecord",
    "LedgerAction",
    "LedgerChanges",
    "MergeActiveIntoProposed",
    "MergePullRequest",
    "OpenPullRequest",
    "PullRequestText",
    "RecordHealthy",
    "RevertOpened",
    "SetCommitStatus",
    "Snapshot",
    "UpdatePullRequest",
    "decide",
    "effective_active_dry_sha",
    "gates_for",
    "ledger_changes",
    "read_metadata",
]
