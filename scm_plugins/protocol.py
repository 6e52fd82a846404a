"""The SCM plugin interface: three small protocols and the plugin that combines them.

Arguments are keyword-only and values are pydantic models from ``promoter.models``.
Implementations raise only ``promoter.errors.Scm*`` errors (translated once, at
their boundary, through ``scm_plugins.calls.ScmCalls``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal, Protocol, runtime_checkable

from promoter.config import Repository, ScmProvider
from promoter.models import CommitStatus, PullRequest, QueueEntry, Review, Verification


class PullRequests(Protocol):
    """Open, find, update, merge and close promotion pull requests."""

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        """The open PR from branch ``head`` into branch ``base``, if any."""
        ...

    def open_pull_request(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        """Open a PR; if one is already open for head/base, return it (idempotent)."""
        ...

    def update_pull_request(
        self,
        *,
        repo: Repository,
        number: int,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest: ...

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        """Merge only if the PR's head is still ``expected_head_sha``; return the merge SHA.

        Raises ScmConflict when the head moved or the SCM refuses the merge for now.
        """
        ...

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None: ...

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None: ...


class CommitStatuses(Protocol):
    """Read a commit's gate results and write the promoter's own."""

    @property
    def folded_gate_keys(self) -> frozenset[str]:
        """The gate keys whose result folds in the statuses the promoter writes on the same
        commit (GitLab adds a commit status to the commit's latest pipeline, so the
        pipeline gate waits for them); empty for an SCM that does not fold them."""
        ...

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        """Every status of ``sha``, latest per key, normalised to CommitStatus.

        With ``keys``, the caller needs only those gates (the re-read before a merge):
        a plugin may then read less, and the result may lack statuses of other keys.
        """
        ...

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None: ...


class GitCredentials(Protocol):
    """How git reaches the repository: extra environment for git, never a token in a URL."""

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        """Variables for git (for example GIT_CONFIG_COUNT/KEY/VALUE with an auth header)."""
        ...


@runtime_checkable
class Reviews(Protocol):
    """Optional: the reviews of a pull request, for the approval gate (docs/gates.md)."""

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        """Every review of PR ``number``, oldest first. ``teams`` are the teams (or groups)
        the approval gate asks about: each review names those its author belongs to."""
        ...


@runtime_checkable
class OptionalReviews(Reviews, Protocol):
    """Reviews a plugin may or may not read, as its SCM says (an out-of-process plugin)."""

    @property
    def reads_reviews(self) -> bool: ...


def review_reader(plugin: object) -> Reviews | None:
    """``plugin``'s reviews half, or None when it cannot read reviews."""
    if isinstance(plugin, OptionalReviews):
        return plugin if plugin.reads_reviews else None
    return plugin if isinstance(plugin, Reviews) else None


@runtime_checkable
class Approvals(Protocol):
    """Optional: approving a pull request as a named user (the local SCM)."""

    def approve_pull_request(self, *, repo: Repository, number: int, user: str) -> None: ...


DeploymentState = Literal["in_progress", "success", "failure", "inactive"]


@runtime_checkable
class Deployments(Protocol):
    """Optional: promotions reported as deployments to an environment (docs/deployments.md)."""

    def create_deployment(
        self,
        *,
        repo: Repository,
        environment: str,
        ref: str,
        sha: str,
        description: str,
        url: str,
        log_url: str,
    ) -> str:
        """A deployment of ``sha`` (on branch ``ref``) to ``environment``, in progress; its id."""
        ...

    def set_deployment_status(
        self,
        *,
        repo: Repository,
        deployment_id: str,
        environment: str,
        state: DeploymentState,
        description: str,
        url: str,
        log_url: str,
    ) -> None:
        """Raises ScmNotFound for a deployment the SCM does not know (any more)."""
        ...


@runtime_checkable
class MergeQueues(Protocol):
    """Optional: a base branch that merges through a queue (GitHub's merge queue, GitLab's
    merge trains): the PR is enqueued instead of merged, its place read back, and taken out
    again where the promoter would not merge it now (a freeze, a hold, a pin, a newer head)."""

    def enqueue_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str
    ) -> QueueEntry:
        """Enqueue only while the PR's head is ``expected_head_sha`` (else ScmConflict)."""
        ...

    def queue_entry(self, *, repo: Repository, number: int) -> QueueEntry:
        """Where the PR stands in its queue, or why it left it."""
        ...

    def dequeue_pull_request(self, *, repo: Repository, number: int) -> QueueEntry:
        """Take the PR out of its queue; where it stands after: out (``queued`` False), or
        merged by the queue before it could be taken out (``merged``). A PR that was not in
        the queue is no error."""
        ...


@runtime_checkable
class MergeQueueDetection(Protocol):
    """Optional: whether merges into a branch must go through the SCM's queue, as the SCM
    says (GitHub: a ``merge_queue`` rule applies to the branch; GitLab: the project runs
    merge trains). ``merge_queue_scope`` says what one answer covers: the branch, or every
    branch of the repository."""

    merge_queue_scope: Literal["branch", "repository"]

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        """Raises ScmError when the SCM's answer cannot be had or read (no permission, 5xx,
        an answer of another shape)."""
        ...


@runtime_checkable
class ReviewerRequests(Protocol):
    """Optional: request reviews on a pull request from people and teams (or groups)."""

    def request_reviewers(
        self, *, repo: Repository, number: int, users: Collection[str], teams: Collection[str]
    ) -> None: ...


@runtime_checkable
class CommitVerifications(Protocol):
    """Optional: the SCM's own verdict on a commit's signature (the signedCommits gate)."""

    def commit_verification(self, *, repo: Repository, sha: str) -> Verification: ...


@runtime_checkable
class ForgottenCommits(Protocol):
    """Optional: let go of what the plugin keeps about commits that no strategy tracks any
    more (answers cached for conditional reads). The promoter calls it from a reconcile,
    with the SHAs the strategy stopped tracking that no other strategy tracks."""

    def forget_commits(self, *, repo: Repository, shas: Collection[str]) -> None: ...


@runtime_checkable
class ScmPlugin(PullRequests, CommitStatuses, GitCredentials, Protocol):
    """A whole SCM plugin, as the registry builds it from a provider's configuration."""

    name: str

    def close(self) -> None:
        """Release connections and files."""
        ...


class PluginFactory(Protocol):
    """What the ``promoter.scm_plugins`` entry point names: builds a plugin."""

    def __call__(self, *, provider: ScmProvider, state_dir: str) -> ScmPlugin: ...
