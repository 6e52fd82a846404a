"""What the daemon keeps of each strategy's last reconcile: a small immutable summary.

A reconcile reads a ``Snapshot`` and decides a ``Decision``: some sixty pydantic models a
strategy, most of which only the next decision needed (its gates' specifications, its
rollout, its reviews, the actions it carried out). Between reconciles the daemon keeps
only what its readers show (the API, the dashboard, notifications, Kubernetes mode's
status, a freeze's scope): the SHAs, states, reasons and timestamps, in slotted
dataclasses built here, in one place, from the snapshot and the decision. They keep the
names of the fields they come from, so a reader reads ``view.snapshot.environments`` as
before. What they hold of the snapshot as it is (the statuses, the pull requests, the
ledger's parsed notes, the freezes, the dry commits) is shared with the caches it was
read from, not copied.

Slotted dataclasses hold no per-instance ``__dict__`` and no set of field names: ten
thousand strategies keep a fraction of the memory their snapshots took (docs/
performance.md, section 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from promoter.engine import (
    CommitState,
    Decision,
    EnvironmentSnapshot,
    EnvironmentVerdict,
    EnvLedger,
    EnvState,
    FreezePeriod,
    GateVerdict,
    HealthyRecord,
    Snapshot,
    UpstreamGroup,
)
from promoter.models import CommitStatus, DryCommit, PullRequest


@dataclass(frozen=True, slots=True)
class KeptCommit:
    """One hydrated branch tip as read: its SHAs and statuses (latest per key)."""

    hydrated_sha: str
    dry_sha: str | None
    metadata_error: str | None
    statuses: tuple[CommitStatus, ...]

    def status(self, key: str) -> CommitStatus | None:
        return next((s for s in self.statuses if s.key == key), None)


@dataclass(frozen=True, slots=True)
class KeptEnvironment:
    """One environment as its last reconcile read it."""

    branch: str
    proposed_branch: str
    auto_merge: bool
    active_keys: tuple[str, ...]
    proposed_keys: tuple[str, ...]
    active: KeptCommit | None
    proposed: KeptCommit | None
    pull_request: PullRequest | None
    revert_pull_request: PullRequest | None
    changelog: tuple[DryCommit, ...]
    ledger: EnvLedger
    active_since: datetime | None
    freezes: tuple[FreezePeriod, ...]
    error: str | None
    upstreams: tuple[UpstreamGroup, ...] | None

    @property
    def last_healthy(self) -> HealthyRecord | None:
        return self.ledger.last_healthy


@dataclass(frozen=True, slots=True)
class KeptSnapshot:
    """A strategy as its last reconcile read it."""

    strategy: str
    repository: str
    environments: tuple[KeptEnvironment, ...]
    labels: tuple[str, ...]
    unheld_labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KeptVerdict:
    """One environment's verdict: its state, the reason, and its gates'."""

    branch: str
    state: EnvState
    reason: str
    gates: tuple[GateVerdict, ...]


@dataclass(frozen=True, slots=True)
class KeptDecision:
    """What the last reconcile decided, as shown: each environment's verdict, and the
    kinds of the actions it carried out (empty: none)."""

    environments: tuple[KeptVerdict, ...]
    actions: tuple[str, ...]


def kept_commit(commit: CommitState | None) -> KeptCommit | None:
    if commit is None:
        return None
    return KeptCommit(commit.hydrated_sha, commit.dry_sha, commit.metadata_error, commit.statuses)


def kept_environment(env: EnvironmentSnapshot) -> KeptEnvironment:
    return KeptEnvironment(
        branch=env.branch,
        proposed_branch=env.proposed_branch,
        auto_merge=env.auto_merge,
        active_keys=env.active_keys,
        proposed_keys=env.proposed_keys,
        active=kept_commit(env.active),
        proposed=kept_commit(env.proposed),
        pull_request=env.pull_request,
        revert_pull_request=env.revert_pull_request,
        changelog=env.changelog,
        ledger=env.ledger,
        active_since=env.active_since,
        freezes=env.freezes,
        error=env.error,
        upstreams=env.upstreams,
    )


def kept_snapshot(snapshot: Snapshot) -> KeptSnapshot:
    """What is kept of ``snapshot``."""
    return KeptSnapshot(
        strategy=snapshot.strategy,
        repository=snapshot.repository,
        environments=tuple(kept_environment(env) for env in snapshot.environments),
        labels=snapshot.labels,
        unheld_labels=snapshot.unheld_labels,
    )


def kept_verdict(verdict: EnvironmentVerdict) -> KeptVerdict:
    return KeptVerdict(verdict.branch, verdict.state, verdict.reason, verdict.gates)


def kept_decision(decision: Decision) -> KeptDecision:
    """What is kept of ``decision``."""
    return KeptDecision(
        environments=tuple(kept_verdict(v) for v in decision.environments),
        actions=tuple(a.kind for a in decision.actions),
    )
