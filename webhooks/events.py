"""The normalised webhook events: what a delivery means, whichever SCM sent it.

A provider module turns one delivery into exactly one of these values; the
dispatcher maps it to strategy keys and status-cache entries. No I/O here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from promoter.models import Phase, PullRequestState


@dataclass(frozen=True, slots=True)
class RepoIdentity:
    """How an event names its repository: any of path, numeric id and clone/web URLs."""

    provider: str
    """``github``, ``gitlab``, ``forgejo``, ``azure-devops``: which kind of configured
    repository it can match."""
    full_path: str
    """GitHub ``full_name`` (owner/name) or GitLab ``path_with_namespace``; may be empty."""
    project_id: int | None = None
    """GitLab's numeric project id."""
    urls: tuple[str, ...] = ()
    """Clone and web URLs as the payload gives them."""


@dataclass(frozen=True, slots=True)
class Push:
    """A ref moved: a branch tip, a notes ref, a tag."""

    repo: RepoIdentity
    ref: str
    before: str | None
    after: str | None
    new_commit: bool = False
    """``after`` was pushed for the first time: the SCM can only have statuses for it that
    it reports from now on (GitHub's ``head_commit.distinct``; GitLab: a commit the push
    brought). Whether a strategy already read it is the dispatcher's question."""

    @property
    def branch(self) -> str | None:
        return self.ref.removeprefix("refs/heads/") if self.ref.startswith("refs/heads/") else None

    @property
    def is_notes(self) -> bool:
        return self.ref.startswith("refs/notes/")


@dataclass(frozen=True, slots=True)
class PushBatch:
    """Several refs moved in one delivery: Bitbucket and Azure DevOps list every ref it moved."""

    repo: RepoIdentity
    pushes: tuple[Push, ...]


@dataclass(frozen=True, slots=True)
class StatusChange:
    """One gate result for one SHA: a commit status, a check run or suite, a pipeline."""

    repo: RepoIdentity
    sha: str
    key: str | None
    """The gate key; None means the repository's pipeline gate key (GitLab pipelines)."""
    phase: Phase
    description: str
    url: str
    source: str
    updated_at: datetime
    revision: int | None = None
    """The SCM's order of reports for this key (GitLab's pipeline id), when it has one."""


@dataclass(frozen=True, slots=True)
class StatusBatch:
    """Several gate results for one SHA at once (a GitLab pipeline and its jobs)."""

    repo: RepoIdentity
    sha: str
    changes: tuple[StatusChange, ...]


@dataclass(frozen=True, slots=True)
class PullRequestChange:
    """A pull or merge request was opened, updated, reviewed, merged or closed."""

    repo: RepoIdentity
    pr_id: str
    number: int | None
    state: PullRequestState
    action: str
    head_branch: str
    base_branch: str
    head_sha: str | None


@dataclass(frozen=True, slots=True)
class Ping:
    """GitHub's hello when a webhook is created; answered 200, nothing else."""


@dataclass(frozen=True, slots=True)
class Ignored:
    """A genuine delivery the promoter has no use for (other events, other actions)."""

    reason: str


Event = Push | PushBatch | StatusChange | StatusBatch | PullRequestChange | Ping | Ignored
