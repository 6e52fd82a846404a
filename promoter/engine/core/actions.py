"""The engine's output: actions for the reconciler to carry out, and verdicts to show.

Actions name an environment by its index in the strategy and carry every value
the reconciler needs, so that carrying them out needs no further decision.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict

from promoter.engine.core.ledger_state import HealthyRecord
from promoter.models import CommitStatus, Phase

PREVIOUS_ENVIRONMENT_KEY = "promoter/previous-environment"
"""The status the promoter writes on a PR head for rule 4."""

HOLD_KEY = "promoter/hold"
"""The status the promoter writes on a PR head whose dry SHA is held (rule 8)."""

GATES_KEY = "promoter/gates"
"""The summary status: every gate of the environment, and the ones still pending."""

REVERT_LABEL = "revert"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenPullRequest(Frozen):
    kind: Literal["open"] = "open"
    environment: int
    head: str
    base: str
    title: str
    body: str
    labels: tuple[str, ...]


class UpdatePullRequest(Frozen):
    kind: Literal["update"] = "update"
    environment: int
    number: int
    title: str
    body: str
    labels: tuple[str, ...]


class MergePullRequest(Frozen):
    kind: Literal["merge"] = "merge"
    environment: int
    number: int
    expected_head_sha: str
    dry_sha: str
    message: str
    required_keys: tuple[str, ...] = ()
    """Proposed gate keys to re-read from the SCM just before merging (rule 6)."""
    purpose: Literal["promotion", "revert", "override"] = "promotion"


class ClosePullRequest(Frozen):
    kind: Literal["close"] = "close"
    environment: int
    number: int
    comment: str


class SetCommitStatus(Frozen):
    kind: Literal["status"] = "status"
    environment: int
    sha: str
    status: CommitStatus


class RecordHealthy(Frozen):
    kind: Literal["healthy"] = "healthy"
    environment: int
    dry_sha: str
    hydrated_sha: str
    since: datetime


class OpenRevert(Frozen):
    """Rule 8: a commit restoring ``restore``'s tree on the active branch, and a revert PR.

    The bad dry SHA is then held in this environment and every later one.
    """

    kind: Literal["revert"] = "revert"
    environment: int
    bad_dry_sha: str
    bad_hydrated_sha: str
    restore: HealthyRecord
    reason: str
    trigger: Literal["auto", "manual"]
    auto_merge: bool
    hold_in: tuple[int, ...] = ()
    """Environments that hold the bad dry SHA: this one and every one downstream of it
    (empty: this one and every later one)."""


class ReleaseHold(Frozen):
    kind: Literal["release"] = "release"
    environment: int
    dry_sha: str
    reason: str


class HoldDryCommit(Frozen):
    """A person holds a dry commit out of this environment (rule 5's holds)."""

    kind: Literal["hold"] = "hold"
    environment: int
    dry_sha: str
    reason: str
    since: datetime


class ResumeEnvironment(Frozen):
    """A person resumes a paused environment; the failure they saw pauses it no more."""

    kind: Literal["resume"] = "resume"
    environment: int
    at: datetime


class PinEnvironment(Frozen):
    """A person pins the environment to a dry commit (``pin``), or lifts the pin (None)."""

    kind: Literal["pin"] = "pin"
    environment: int
    dry_sha: str | None
    reason: str = ""
    since: datetime | None = None


class ApproveChange(Frozen):
    """A person lets a blocked dry commit through this environment."""

    kind: Literal["approve-change"] = "approve-change"
    environment: int
    dry_sha: str


class Announce(Frozen):
    """A change becomes eligible for a tier with a notice period: record it, say so."""

    kind: Literal["announce"] = "announce"
    environment: int
    dry_sha: str
    at: datetime


class PauseEnvironment(Frozen):
    """A second failure after a revert: stop promoting into this environment automatically."""

    kind: Literal["pause"] = "pause"
    environment: int
    reason: str


class CommentPullRequest(Frozen):
    kind: Literal["comment"] = "comment"
    environment: int
    number: int
    body: str


class EnqueuePullRequest(Frozen):
    """Rule 6 through a merge queue: enqueue the PR with its head as the guard, after the
    required gates are read again (like a merge)."""

    kind: Literal["enqueue"] = "enqueue"
    environment: int
    number: int
    expected_head_sha: str
    dry_sha: str
    attempt: int
    required_keys: tuple[str, ...] = ()


class RecordDequeue(Frozen):
    """The queue took the PR out without merging it: a failed attempt, told on the PR."""

    kind: Literal["dequeue"] = "dequeue"
    environment: int
    number: int
    reason: str
    at: datetime


class DequeuePullRequest(Frozen):
    """Stop means stop: take the PR out of the merge queue, where the promoter would not merge
    it now (a freeze, a hold, a pin, a newer head, a gate that no longer passes). ``comment``
    tells the PR; ``race_comment`` tells it instead when the queue merged it first."""

    kind: Literal["withdraw"] = "withdraw"
    environment: int
    number: int
    dry_sha: str
    reason: str
    race: str
    """What the merge was a race against, should the queue have merged it first."""
    at: datetime
    comment: str
    race_comment: str


class RecordQueueMerge(Frozen):
    """The PR the promoter had in the merge queue is merged: the attempt is settled; with
    ``race`` (what stops it now), it merged before the promoter could take it out."""

    kind: Literal["queue-merged"] = "queue-merged"
    environment: int
    number: int
    dry_sha: str
    at: datetime
    race: str = ""


class CreateDeployment(Frozen):
    """Report what the environment runs as a new SCM deployment, in progress.

    ``sha`` None: the commit the merge decided in the same pass makes (created only when
    that merge happened). ``supersedes``: the deployment it replaces, set inactive."""

    kind: Literal["deployment"] = "deployment"
    environment: int
    sha: str | None
    dry_sha: str
    scm_environment: str
    url: str = ""
    pr: int | None = None
    pr_url: str = ""
    supersedes: str | None = None


class SetDeploymentStatus(Frozen):
    """A deployment's state changes: success (active gates green), failure (a gate failed,
    or a revert opened), inactive (superseded)."""

    kind: Literal["deployment-status"] = "deployment-status"
    environment: int
    deployment_id: str
    scm_environment: str
    state: Literal["in_progress", "success", "failure", "inactive"]
    description: str
    url: str = ""
    log_url: str = ""


class RequestReviewers(Frozen):
    """Ask for reviews on a promotion PR, once: the ledger records it. ``left_out``: the
    configured reviewers not asked, each with why ("ada (opened the pull request)"), told
    on the PR with those the SCM refuses."""

    kind: Literal["reviewers"] = "reviewers"
    environment: int
    number: int
    users: tuple[str, ...]
    teams: tuple[str, ...]
    left_out: tuple[str, ...] = ()


class ApprovePullRequest(Frozen):
    """A person approves the open PR of an environment (through an SCM that allows it)."""

    kind: Literal["approve"] = "approve"
    environment: int
    number: int
    user: str


class RecordOverride(Frozen):
    """A break-glass promotion, kept in the ledger."""

    kind: Literal["override"] = "override"
    environment: int
    dry_sha: str
    reason: str
    at: datetime


class MergeActiveIntoProposed(Frozen):
    """Rule 6: make a conflicting promotion mergeable again (after a revert, a hotfix, a squash).

    An "ours" merge of the active branch onto the proposed branch: a commit whose parents
    are ``proposed_sha`` then ``active_sha`` and whose tree is ``tree_sha``, the proposed
    tree (the proposed tree wins), pushed with a lease on ``proposed_sha``.
    """

    kind: Literal["mergeable"] = "mergeable"
    environment: int
    proposed_branch: str
    proposed_sha: str
    active_branch: str
    active_sha: str
    tree_sha: str


Action = (
    OpenPullRequest
    | UpdatePullRequest
    | MergePullRequest
    | ClosePullRequest
    | SetCommitStatus
    | RecordHealthy
    | OpenRevert
    | ReleaseHold
    | HoldDryCommit
    | ResumeEnvironment
    | PinEnvironment
    | ApproveChange
    | Announce
    | PauseEnvironment
    | CommentPullRequest
    | ApprovePullRequest
    | RequestReviewers
    | CreateDeployment
    | SetDeploymentStatus
    | EnqueuePullRequest
    | RecordDequeue
    | DequeuePullRequest
    | RecordQueueMerge
    | RecordOverride
    | MergeActiveIntoProposed
)


class EnvState(StrEnum):
    """What an environment is doing, in one word."""

    UP_TO_DATE = "up-to-date"
    UNHEALTHY = "unhealthy"  # nothing to promote, but an active gate failed on what it runs
    WAITING = "waiting"  # no proposed commit yet
    BLOCKED = "blocked"  # a gate is not success, or a rule forbids it
    READY = "ready"  # every gate passes, waiting for a person (autoMerge off)
    PROMOTING = "promoting"  # a merge is among the actions
    REVERTING = "reverting"  # a revert PR is open or being opened
    ERROR = "error"


class GateVerdict(Frozen):
    """One gate of one environment, with a plain reason, and when it may change by itself."""

    name: str
    phase: Phase
    reason: str
    changes_at: datetime | None = None
    """The instant the verdict changes with no event (a soak ends, a window opens)."""


class EnvironmentVerdict(Frozen):
    branch: str
    state: EnvState
    reason: str
    gates: tuple[GateVerdict, ...] = ()


class Decision(Frozen):
    actions: tuple[Action, ...]
    environments: tuple[EnvironmentVerdict, ...]
    requeue_after: float | None = None
    """Seconds after which to decide again though nothing happened (a soak ends, a window
    opens, a PR just opened is merged on the next pass); None: only when something does."""
