"""Bitbucket Data Center JSON as the promoter's models: pull requests, reviews, build statuses.

Fields a server of another version lacks are read as absent (``draft`` came with 8.x,
``links`` may be missing, ``UNKNOWN`` build states with 7.x); an answer that is not the
object asked for is an ``ScmError``, never a ``KeyError`` in a reconcile.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from promoter.errors import ScmError
from promoter.models import CommitStatus, PullRequest, PullRequestState, Review, utcnow
from scm_plugins.bitbucket.states import epoch_ms, phase_of

STATES = {
    "OPEN": PullRequestState.OPEN,
    "MERGED": PullRequestState.MERGED,
    "DECLINED": PullRequestState.CLOSED,
}
SOURCE = "bitbucket-datacenter"
DECIDING = {"APPROVED": True, "NEEDS_WORK": False}
"""Review statuses that set where a reviewer stands; UNAPPROVED (never approved, or taken
back) decides nothing."""


def branch_of(ref: Any) -> str:
    """``refs/heads/x`` (or ``displayId``) of a ``fromRef``/``toRef`` as the branch ``x``."""
    if not isinstance(ref, dict):
        return ""
    ref_id = str(ref.get("id") or "")
    if ref_id.startswith("refs/heads/"):
        return ref_id.removeprefix("refs/heads/")
    return str(ref.get("displayId") or ref_id)


def _link(data: dict[str, Any]) -> str:
    links = (data.get("links") or {}).get("self") or []
    if isinstance(links, list) and links and isinstance(links[0], dict):
        return str(links[0].get("href") or "")
    return ""


def pull_request(data: Any) -> PullRequest:
    """A Data Center pull request (REST shape) as the promoter's ``PullRequest``."""
    if not isinstance(data, dict) or "id" not in data or not isinstance(data.get("fromRef"), dict):
        raise ScmError("Bitbucket Data Center answered something that is not a pull request")
    merge = ((data.get("properties") or {}).get("mergeCommit") or {}).get("id")
    author = ((data.get("author") or {}).get("user") or {}).get("name")
    return PullRequest(
        id=str(data["id"]),
        number=int(data["id"]),
        head_branch=branch_of(data.get("fromRef")),
        base_branch=branch_of(data.get("toRef")),
        head_sha=str(data["fromRef"].get("latestCommit") or ""),
        state=STATES.get(str(data.get("state")), PullRequestState.CLOSED),
        title=str(data.get("title") or ""),
        body=str(data.get("description") or ""),
        labels=(),
        url=_link(data),
        draft=bool(data.get("draft")),
        merge_sha=str(merge) if merge else None,
        author=str(author or ""),
    )


def version_of(data: Any) -> int:
    """The pull request's version, its optimistic lock (0 when a server leaves it out)."""
    value = data.get("version") if isinstance(data, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def reviews(data: dict[str, Any]) -> list[Review]:
    """The deciding reviews of a pull request's reviewers and participants, each person once
    (the author's own entry is no review)."""
    found: dict[str, Review] = {}
    for entry in [*(data.get("reviewers") or []), *(data.get("participants") or [])]:
        if not isinstance(entry, dict) or entry.get("role") == "AUTHOR":
            continue
        approved = DECIDING.get(str(entry.get("status") or ""))
        if approved is None and entry.get("approved") is True:
            approved = True
        user = entry.get("user") or {}
        login = user.get("name") or user.get("slug")
        if approved is None or not login or login in found:
            continue
        found[str(login)] = Review(
            user=str(login),
            approved=approved,
            commit_sha=str(entry.get("lastReviewedCommit") or ""),
            name=str(user.get("displayName") or ""),
        )
    return list(found.values())


def latest_statuses(items: Iterable[Any]) -> list[CommitStatus]:
    """The latest build status per key (``dateAdded``, or ``updatedDate`` on newer servers)."""
    latest: dict[str, tuple[float, dict[str, Any]]] = {}
    for item in items:
        if not isinstance(item, dict) or not item.get("key"):
            continue
        when = item.get("updatedDate") or item.get("dateAdded") or 0
        stamp = float(when) if isinstance(when, int | float) else 0.0
        key = str(item["key"])
        if key not in latest or stamp >= latest[key][0]:
            latest[key] = (stamp, item)
    return [
        CommitStatus(
            key=key[:255],
            phase=phase_of(item.get("state")),
            description=str(item.get("description") or item.get("name") or item.get("state")),
            url=str(item.get("url") or ""),
            source=SOURCE,
            updated_at=epoch_ms(item.get("updatedDate") or item.get("dateAdded")) or utcnow(),
        )
        for key, (_, item) in sorted(latest.items())
    ]
