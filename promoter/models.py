"""Domain values shared by the engine, the reconciler, the SCM plugins and the webhooks.

These are plain pydantic models with the upstream gitops-promoter vocabulary
(`drySha`, `hydratedSha`, `commitStatuses`); they carry no behaviour and no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

SHA_RE = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def _check_sha(value: str) -> str:
    value = value.lower()
    if not SHA_RE.match(value):
        raise ValueError("must be a full 40- or 64-character hexadecimal commit SHA")
    return value


Sha = Annotated[str, AfterValidator(_check_sha)]
"""A full commit SHA (lower case)."""


def utcnow() -> datetime:
    """The current time, timezone-aware (UTC)."""
    return datetime.now(UTC)


class Model(BaseModel):
    """Base for domain values: camelCase aliases accepted, populate by name too."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="forbid")


class Phase(StrEnum):
    """The state of one gate for one commit."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"


class CommitStatus(Model):
    """One gate result for one SHA, normalised from whatever the SCM calls it."""

    key: str = Field(min_length=1, max_length=255)
    phase: Phase
    description: str = ""
    url: str = ""
    source: str = ""
    updated_at: datetime = Field(default_factory=utcnow, alias="updatedAt")
    revision: int | None = None
    """The SCM's own order of this status's reports when it has one (GitLab: the pipeline
    id); compared before ``updated_at``, whose precision differs between hooks and reads."""


class PullRequestState(StrEnum):
    OPEN = "open"
    CLOSED = "closed"
    MERGED = "merged"


class PullRequest(Model):
    """A promotion or revert pull request as the SCM reports it."""

    id: str
    number: int
    head_branch: str = Field(alias="headBranch")
    base_branch: str = Field(alias="baseBranch")
    head_sha: str = Field(alias="headSha")
    state: PullRequestState
    title: str = ""
    body: str = ""
    labels: tuple[str, ...] = ()
    url: str = ""
    draft: bool = False
    merge_sha: str | None = Field(default=None, alias="mergeSha")
    author: str = ""
    """The login of whoever opened it (the promoter's own account for a promotion PR);
    "" when the SCM did not say. Its approvals never count (docs/gates.md)."""


class DryCommit(Model):
    """One commit of the dry branch, for changelogs."""

    sha: str
    subject: str
    author: str
    date: datetime | None = None
    url: str = ""
    body: str = ""


class Review(Model):
    """One person's review of a pull request (a GitHub review, a GitLab approval)."""

    user: str
    approved: bool
    commit_sha: str = Field(default="", alias="commitSha")
    """The head the review was given on ("" when the SCM does not say)."""
    teams: tuple[str, ...] = ()
    name: str = ""
    """The reviewer's display name, when the SCM gives it (matched against git authors)."""


class Author(Model):
    """A person named by a commit: its git author, or a ``Co-authored-by`` trailer."""

    name: str
    email: str = ""


class Verification(Model):
    """An SCM's own verdict on a commit's signature (GitHub's ``verification``)."""

    verified: bool
    reason: str = ""


class QueueEntry(Model):
    """A pull request's place in its base branch's merge queue (GitHub) or merge train
    (GitLab), or why it left it."""

    queued: bool
    state: str = ""
    """The SCM's word for where it stands (GitHub: QUEUED, AWAITING_CHECKS, MERGEABLE,
    UNMERGEABLE, LOCKED; GitLab: idle, stale, fresh, merging)."""
    position: int | None = None
    checks: str = ""
    """The merge group's checks as the SCM sums them up (GitHub: SUCCESS, PENDING, FAILURE)."""
    removed_reason: str = ""
    """Why it was last taken out of the queue, when it is not in it."""
    removed_at: datetime | None = None
    merged: bool = False
    """The PR is merged (by the queue, or by a person): it left the queue that way."""


class HydratorMetadata(Model):
    """What a hydrated commit says about the dry commit it was rendered from."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")

    dry_sha: str = Field(alias="drySha")
    repo_url: str = Field(default="", alias="repoURL")
    author: str = ""
    date: str = ""
    subject: str = ""
    body: str = ""
    source: str = Field(default="", description="'note' or 'file': where it was read from")
