"""The engine's input: everything read from git, the SCM and the cache for one strategy.

A snapshot is immutable and self-contained; ``decide`` reads nothing else. An
environment's branches, commits, open PR and ledger are plain fields; what one SCM
feature adds (approvals, signatures, the merge queue, deployments) is a part of its own,
a frozen model below, filled by one function of ``promoter.daemon.reading``. A read that
can fail or not be asked is a ``Read`` (``reads``).
"""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from promoter.config.gates import GateSpec
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord
from promoter.engine.core.reads import Frozen, Read
from promoter.models import Author, CommitStatus, DryCommit, PullRequest, QueueEntry, Review


class CommitState(Frozen):
    """One hydrated branch tip: its SHA, tree, dry SHA and statuses (latest per key)."""

    hydrated_sha: str
    tree_sha: str
    dry_sha: str | None = None
    metadata_error: str | None = None
    statuses: tuple[CommitStatus, ...] = ()
    by_merge: bool = False
    """A proposed tip the hydrator did not write: a merge (the promoter's "ours" merge of
    the active branch, after a revert), on which CI has not run."""

    def status(self, key: str) -> CommitStatus | None:
        return next((s for s in self.statuses if s.key == key), None)


class AutoRevertPolicy(Frozen):
    enabled: bool = False
    settle_time: float = 120.0
    auto_merge: bool = False


class UpstreamGroup(Frozen):
    """Environments (by index) of which ``require`` must run a change healthy first."""

    indices: tuple[int, ...]
    require: int


class Rollout(Frozen):
    """Where an environment stands in a staged rollout (docs/rollouts.md)."""

    tier: str | None = None
    tier_members: tuple[int, ...] = ()
    max_parallel: int | None = None
    notice_lead: float | None = None
    block_trailer: str | None = None
    """Dry commits with this trailer stop here until a person approves them."""
    block_label: str | None = None
    """A promotion PR with this label stops here until a person approves its change."""


class FreezePeriod(Frozen):
    """A freeze that covers an environment: a person's (no end) or a configured date or range."""

    reason: str
    scope: str
    """What it freezes, in words: "everything", "strategy guestbook", "environment/prod"."""
    start: datetime | None = None
    end: datetime | None = None
    time_zone: str = "UTC"
    """The zone its end is shown in."""
    by: str = ""
    """Who froze it (a person's freeze)."""


# The per-feature parts, each filled by one function of ``promoter.daemon.reading``.

ReviewsRead = Read[tuple[Review, ...]]
"""The open pull request's reviews."""
AuthorsRead = Read[tuple[Author, ...]]
"""The authors and co-authors of the dry commits being promoted."""


class CommitSignature(Frozen):
    """A dry commit's signature as git verified it against the configured signers."""

    sha: str
    verdict: str
    """good, unsigned, unknown-signer, bad, expired or revoked."""
    signer: str = ""
    key: str = ""
    scm_verified: bool | None = None
    """The SCM's own verdict when asked for (None: not asked, or not read)."""
    scm_reason: str = ""


SignaturesRead = Read[tuple[CommitSignature, ...]]
"""The signatures of the dry commits being promoted, oldest first: read only when a
``signedCommits`` gate asks (empty when nothing is to be promoted)."""


class Approvals(Frozen):
    """What approval gates and reviewer requests read of the open pull request."""

    reviews: ReviewsRead = ReviewsRead()
    """Read only when an approval gate asks and a PR is open; a plugin that cannot read
    reviews gives the reason."""
    change_authors: AuthorsRead = AuthorsRead()
    """Read only when a PR is open and an approval gate leaves the change's authors out
    (``excludeChangeAuthors``) or reviewers are to be requested (they are not asked)."""
    reviewers: tuple[str, ...] = ()
    """Users to request on the promotion PR (configured, and code owners when asked)."""
    reviewer_teams: tuple[str, ...] = ()
    """Teams (GitHub) or groups (GitLab) to request on the promotion PR."""


NO_APPROVALS = Approvals()
"""Nothing asked: no approval gate, no reviewer to request, or no PR."""


class Queueing(Frozen):
    """Whether the environment's branch merges through the SCM's merge queue."""

    on: bool = False
    """Promotion PRs are enqueued, not merged."""
    from_scm: bool = False
    """``mergeQueue`` is not configured: ``on`` is what the SCM says, and a merge the SCM
    refuses for want of its queue is enqueued instead."""
    entry: QueueEntry | None = None
    """The open PR's place in the queue, read while the promoter's attempt is in it."""


class DeploymentTarget(Frozen):
    """The SCM environment promotions are reported to as deployments."""

    environment: str | None = None
    """None: promotions of this environment are not reported."""
    url: str = ""


NO_DEPLOYMENT = DeploymentTarget()


class EnvironmentSnapshot(Frozen):
    """One environment: its configuration, the state of its two branches, its parts."""

    branch: str
    proposed_branch: str
    auto_merge: bool
    active_keys: tuple[str, ...] = ()
    proposed_keys: tuple[str, ...] = ()
    active: CommitState | None = None
    proposed: CommitState | None = None
    pull_request: PullRequest | None = None
    changelog: tuple[DryCommit, ...] = ()
    ledger: EnvLedger = EnvLedger()
    active_since: datetime | None = Field(
        default=None, description="When the active hydrated commit was committed (merged)."
    )
    auto_revert: AutoRevertPolicy = Field(default_factory=lambda: AutoRevertPolicy())
    revert_pull_request: PullRequest | None = Field(
        default=None, description="The open PR of the revert in flight, if any."
    )
    proposed_in_active: bool = Field(
        default=False,
        description="The proposed hydrated commit is already in the active branch's history "
        "(e.g. merged, then reverted): an SCM refuses a PR for it.",
    )
    merge_conflicts: bool = Field(
        default=False,
        description="A three-way merge of the active branch into the proposed branch "
        "conflicts: an SCM would refuse the promotion PR as not mergeable.",
    )
    error: str | None = Field(default=None, description="Reading this environment failed.")
    gates: tuple[GateSpec, ...] = Field(
        default=(), description="Built-in gates configured on this environment (rule 5)."
    )
    upstreams: tuple[UpstreamGroup, ...] | None = Field(
        default=None,
        description="What this environment waits for; None: the environment before it.",
    )
    rollout: Rollout = Field(default_factory=lambda: Rollout())
    freezes: tuple[FreezePeriod, ...] = Field(
        default=(), description="Freezes covering the environment, in force or to come."
    )
    approvals: Approvals = NO_APPROVALS
    """The open PR's reviews, the change's authors, the reviewers to request."""
    signatures: SignaturesRead = SignaturesRead()
    """Signatures of the dry commits being promoted (``signedCommits`` gates)."""
    queueing: Queueing = Queueing()
    """Whether the branch merges through the SCM's queue, and the open PR's place in it."""
    deployment: DeploymentTarget = NO_DEPLOYMENT
    """Where promotions are reported as deployments."""

    @property
    def last_healthy(self) -> HealthyRecord | None:
        return self.ledger.last_healthy


class Snapshot(Frozen):
    """A strategy at one instant.

    ``ancestry`` holds every pair ``(ancestor, descendant)`` of distinct dry SHAs
    appearing in the environments for which ``ancestor`` is an ancestor of
    ``descendant`` on the dry branch's history; the engine asks nothing else of git.
    """

    strategy: str
    repository: str
    dry_branch: str
    environments: tuple[EnvironmentSnapshot, ...]
    ancestry: frozenset[tuple[str, str]] = frozenset()
    status_url: str = ""
    folded_keys: frozenset[str] = frozenset()
    """Gate keys whose result on the SCM folds in the statuses the promoter writes on the
    same commit (GitLab's pipeline gate): the summary check must not wait for them."""
    labels: tuple[str, ...] = ()
    """The labels every promotion PR carries (the strategy's ``labels``)."""
    unheld_labels: tuple[str, ...] = ()
    """Labels the SCM did not keep on a pull request lately (Forgejo drops a label the
    repository lacks): not asked for again until their retry, with backoff."""
    now: datetime

    def descends(self, descendant: str, ancestor: str) -> bool:
        """True when ``descendant`` equals ``ancestor`` or has it in its history."""
        return descendant == ancestor or (ancestor, descendant) in self.ancestry
