"""Forgejo / Gitea JSON to the promoter's models (pull requests, reviews, commit statuses)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState, Review

PHASES = {
    "pending": Phase.PENDING,
    "success": Phase.SUCCESS,
    "skipped": Phase.SUCCESS,
    "failure": Phase.FAILURE,
    "error": Phase.FAILURE,
    "warning": Phase.FAILURE,
}
STATES = {Phase.PENDING: "pending", Phase.SUCCESS: "success", Phase.FAILURE: "failure"}
DECIDING = {"APPROVED": True, "REQUEST_CHANGES": False}
"""Review states that set where a reviewer stands; COMMENT, PENDING and REQUEST_REVIEW do not."""


def pull_request(data: dict[str, Any]) -> PullRequest:
    state = PullRequestState.OPEN
    if data.get("merged"):
        state = PullRequestState.MERGED
    elif data.get("state") == "closed":
        state = PullRequestState.CLOSED
    return PullRequest(
        id=str(data["id"]),
        number=int(data["number"]),
        head_branch=data["head"]["ref"],
        base_branch=data["base"]["ref"],
        head_sha=data["head"].get("sha") or "",
        state=state,
        title=data.get("title") or "",
        body=data.get("body") or "",
        labels=tuple(label["name"] for label in data.get("labels") or ()),
        url=data.get("html_url") or "",
        draft=bool(data.get("draft", False)),
        merge_sha=data.get("merge_commit_sha") or None,
        author=str((data.get("user") or {}).get("login") or ""),
    )


def review(data: dict[str, Any]) -> Review | None:
    """A Gitea ``PullReview`` as a ``Review``, or None when it decides nothing. A dismissed
    approval no longer approves."""
    approved = DECIDING.get(str(data.get("state") or ""))
    user = data.get("user") or {}
    login = user.get("login")
    if approved is None or not login:
        return None
    return Review(
        user=str(login),
        approved=approved and not data.get("dismissed"),
        commit_sha=str(data.get("commit_id") or ""),
        name=str(user.get("full_name") or ""),
    )


def _time(value: Any) -> datetime:
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
    return datetime.now(UTC)


def latest_statuses(items: list[dict[str, Any]]) -> list[CommitStatus]:
    """The latest status per context (Gitea lists every status, newest id last or first)."""
    latest: dict[str, dict[str, Any]] = {}
    for item in items:
        key = item.get("context") or ""
        if key and (key not in latest or int(item.get("id", 0)) > int(latest[key].get("id", 0))):
            latest[key] = item
    return [
        CommitStatus(
            key=key,
            phase=PHASES.get(str(item.get("status") or item.get("state")), Phase.FAILURE),
            description=item.get("description") or "",
            url=item.get("target_url") or "",
            source="forgejo/status",
            updated_at=_time(item.get("updated_at") or item.get("created_at")),
        )
        for key, item in sorted(latest.items())
    ]
