"""The engine: the pure promotion rules, ``decide(snapshot) -> Decision``.

Callers outside the engine import it from here, never from its modules. ``operations`` is
the namespace of what a person's manual operation means (``operations.hold``,
``operations.revert``, ...): its verbs would be ambiguous on their own.
"""

from promoter.engine import operations
from promoter.engine.actions import (
    GATES_KEY,
    HOLD_KEY,
    PREVIOUS_ENVIRONMENT_KEY,
    REVERT_LABEL,
    Action,
    Announce,
    ApproveChange,
    ApprovePullRequest,
    ClosePullRequest,
    CommentPullRequest,
    Decision,
    EnvironmentVerdict,
    EnvState,
    GateVerdict,
    HoldDryCommit,
    MergeActiveIntoProposed,
    MergePullRequest,
    OpenPullRequest,
    OpenRevert,
    PauseEnvironment,
    PinEnvironment,
    RecordHealthy,
    RecordOverride,
    ReleaseHold,
    ResumeEnvironment,
    SetCommitStatus,
    UpdatePullRequest,
)
from promoter.engine.dag import shape_of
from promoter.engine.decide import decide
from promoter.engine.dora import DoraFigures, dora
from promoter.engine.freeze import FREEZE_KEY
from promoter.engine.gates import BUILTIN_GATES, Gate, effective_active_dry_sha, gates_for, is_no_op
from promoter.engine.ledger_changes import LedgerAction, LedgerChanges, RevertOpened, ledger_changes
from promoter.engine.ledger_state import (
    Announcement,
    EnvLedger,
    Freeze,
    FreezeEvent,
    HealthyRecord,
    Hold,
    Override,
    Pin,
    Revert,
)
from promoter.engine.mergeable import message as ours_merge_message
from promoter.engine.operations import Refusal
from promoter.engine.pr_text import PullRequestText, read_metadata
from promoter.engine.pr_text import short as short_sha
from promoter.engine.snapshot import (
    AutoRevertPolicy,
    CommitState,
    EnvironmentSnapshot,
    FreezePeriod,
    Rollout,
    Snapshot,
    UpstreamGroup,
)

__all__ = [
    "BUILTIN_GATES",
    "FREEZE_KEY",
    "GATES_KEY",
    "HOLD_KEY",
    "PREVIOUS_ENVIRONMENT_KEY",
    "REVERT_LABEL",
    "Action",
    "Announce",
    "Announcement",
    "ApproveChange",
    "ApprovePullRequest",
    "AutoRevertPolicy",
    "ClosePullRequest",
    "CommentPullRequest",
    "CommitState",
    "Decision",
    "DoraFigures",
    "EnvLedger",
    "EnvState",
    "EnvironmentSnapshot",
    "EnvironmentVerdict",
    "Freeze",
    "FreezeEvent",
    "FreezePeriod",
    "Gate",
    "GateVerdict",
    "HealthyRecord",
    "Hold",
    "HoldDryCommit",
    "LedgerAction",
    "LedgerChanges",
    "MergeActiveIntoProposed",
    "MergePullRequest",
    "OpenPullRequest",
    "OpenRevert",
    "Override",
    "PauseEnvironment",
    "Pin",
    "PinEnvironment",
    "PullRequestText",
    "RecordHealthy",
    "RecordOverride",
    "Refusal",
    "ReleaseHold",
    "ResumeEnvironment",
    "Revert",
    "RevertOpened",
    "Rollout",
    "SetCommitStatus",
    "Snapshot",
    "UpdatePullRequest",
    "UpstreamGroup",
    "decide",
    "dora",
    "effective_active_dry_sha",
    "gates_for",
    "is_no_op",
    "ledger_changes",
    "operations",
    "ours_merge_message",
    "read_metadata",
    "shape_of",
    "short_sha",
]
