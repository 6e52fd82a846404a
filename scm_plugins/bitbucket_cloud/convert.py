"""Bitbucket Cloud JSON as the promoter's models: pull requests, reviews, commit statuses.

Cloud gives a pull request's commits as 12-character hashes (``source.commit.hash``,
``merge_commit.hash``): ``pull_request`` takes the full head SHA from the caller, who
resolves it (``tips``). A person is named by ``username`` where an older answer has it,
else ``nickname``, else ``account_id``; fields a capture lacks are read as absent.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from promoter.errors import ScmError
from promoter.models import CommitStatus, PullRequest, PullRequestState, Review, utcnow
from scm_plugins.bitbucket.states import iso_time, phase_of

STATES = {
    "OPEN": PullRequestState.OPEN,
    "MERGED": PullRequestState.MERGED,
    "DECLINED": PullRequestState.CLOSED,
    "SUPERSEDED": PullRequestState.CLOSED,
}
SOURCE = "bitbucket-cloud"


def login(user: Any) -> str:
    """How the promoter names a Bitbucket Cloud user."""
    if not isinstance(user, dict):
        return ""
    for field in ("username", "nickname", "account_id", "uuid"):
        if user.get(field):
            return str(user[field])
    return ""


def _get(data: Any, *path: str) -> Any:
    for part in path:
        data = data.get(part) if isinstance(data, dict) else None
    return data


def head_hash(data: Any) -> str:
    """The pull request's head as Cloud gives it (12 characters)."""
    return str(_get(data, "source", "commit", "hash") or "")


def merge_hash(data: Any) -> str:
    return str(_get(data, "merge_commit", "hash") or "")


def branches(data: Any) -> tuple[str, str]:
    """The pull request's source and destination branches."""
    if not isinstance(data, dict) or "id" not in data:
        raise ScmError("Bitbucket Cloud answered something that is not a pull request")
    source = _get(data, "source", "branch", "name")
    target = _get(data, "destination", "branch", "name")
    if not isinstance(source, str) or not isinstance(target, str):
        raise ScmError("Bitbucket Cloud's pull request names no source or destination branch")
    return source, target


def pull_request(data: Any, *, head_sha: str, merge_sha: str | None = None) -> PullRequest:
    """A Cloud pull request (REST or webhook shape) with its resolved full head SHA."""
    source, target = branches(data)
    return PullRequest(
        id=str(data["id"]),
        number=int(data["id"]),
        head_branch=source,
        base_branch=target,
        head_sha=head_sha,
        state=STATES.get(str(data.get("state")), PullRequestState.CLOSED),
        title=str(data.get("title") or ""),
        body=str(data.get("description") or ""),
        labels=(),
        url=str(_get(data, "links", "html", "href") or ""),
        draft=bool(data.get("draft")),
        merge_sha=merge_sha,
        author=login(data.get("author")),
    )


def reviews(data: dict[str, Any]) -> list[Review]:
    """Participants who approved (``approved``) or asked for changes
    (``state: changes_requested``), oldest first; the others decide nothing."""
    found: list[tuple[datetime, Review]] = []
    for entry in data.get("participants") or []:
        if not isinstance(entry, dict):
            continue
        if entry.get("approved") is True:
            approved = True
        elif entry.get("state") == "changes_requested":
            approved = False
        else:
            continue
        user = entry.get("user")
        name = login(user)
        if not name:
            continue
        when = iso_time(entry.get("participated_on")) or utcnow()
        display = str(user.get("display_name") or "") if isinstance(user, dict) else ""
        found.append((when, Review(user=name, approved=approved, name=display)))
    return [review for _, review in sorted(found, key=lambda pair: pair[0])]


def latest_statuses(items: Iterable[Any]) -> list[CommitStatus]:
    """The newest status of each key (Cloud keeps one per key and commit)."""
    latest: dict[str, tuple[datetime, dict[str, Any]]] = {}
    for item in items:
        if not isinstance(item, dict) or not item.get("key"):
            continue
        when = iso_time(item.get("updated_on")) or iso_time(item.get("created_on")) or utcnow()
        key = str(item["key"])
        if key not in latest or when >= latest[key][0]:
            latest[key] = (when, item)
    return [
        CommitStatus(
            key=key[:255],
            phase=phase_of(item.get("state")),
            description=str(item.get("description") or item.get("name") or item.get("state")),
            url=str(item.get("url") or ""),
            source=SOURCE,
            updated_at=when,
        )
        for key, (when, item) in sorted(latest.items())
    ]
