"""Forgejo / Gitea JSON to the promoter's models (pull requests, commit statuses)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState

PHASES = {
    "pending": Phase.PENDING,
    "success": Phase.SUCCESS,
    "skipped": Phase.SUCCESS,
    "failure": Phase.FAILURE,
    "error": Phase.FAILURE,
    "warning": Phase.FAILURE,
}
STATES = {Phase.PENDING: "pending", Phase.SUCCESS: "success", Phase.FAILURE: "failure"}


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
