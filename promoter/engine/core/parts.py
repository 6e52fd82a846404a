"""The snapshot's per-feature parts, and the value-or-reason type of the reads that fill them.

An environment's snapshot keeps its branches and their commits, its open pull request and
its ledger as plain fields: every rule reads them. What one SCM feature adds is a part: a
frozen model of its own (``Approvals``, ``Queueing``, ``DeploymentTarget``), filled by one
function of ``promoter.daemon.reading`` and read by the rule or gate of that feature.

A read that can fail, or that is made only when a gate asks for it, is a ``Read``: its
value, or the reason it could not be read, or neither (not asked). The rules fail closed
on a reason: the gate that needed the read waits, saying why.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from promoter.models import Author, QueueEntry, Review

T = TypeVar("T")


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Read(Frozen, Generic[T]):
    """A value read from git or the SCM, or why it could not be read; neither: not asked.

    Build it through a parametrized alias (``ReviewsRead(value=...)``): pydantic validates an
    unparametrized ``Read`` again when it is given to a field."""

    value: T | None = None
    reason: str | None = None
    """Why the value could not be read (set only without a value)."""

    @property
    def asked(self) -> bool:
        """The value was read, or its read was tried and failed."""
        return self.value is not None or self.reason is not None


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
