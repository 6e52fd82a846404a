"""A GitHub status or check run, as the REST API or GraphQL gives it, as a ``CommitStatus``.

Check runs count by name, latest run wins: success, neutral and skipped are success;
queued, in progress (and waiting, requested, pending) are pending; any other conclusion
is failure. Statuses: error and failure are failure. GraphQL's enums are the REST
values in capitals (``StatusState``, ``CheckStatusState``, ``CheckConclusionState``), and
its field names are camelCase: each GraphQL context becomes what the REST read of the
same status or check run gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from promoter.models import CommitStatus, Phase, utcnow

# the same sources, urls and descriptions as webhooks/providers/github.py
SOURCE_STATUS = "github/status"
SOURCE_CHECK_RUN = "github/check_run"

_STATUS_PHASE = {"success": Phase.SUCCESS, "pending": Phase.PENDING}
_CHECK_SUCCESS = frozenset({"success", "neutral", "skipped"})


def _time(value: Any) -> datetime:
    if not value:
        return utcnow()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def from_status(item: dict[str, Any]) -> CommitStatus:
    """One commit status (``context``/``state``) as a CommitStatus."""
    return CommitStatus(
        key=str(item["context"]),
        phase=_STATUS_PHASE.get(str(item.get("state")), Phase.FAILURE),
        description=str(item.get("description") or ""),
        url=str(item.get("target_url") or ""),
        source=SOURCE_STATUS,
        updated_at=_time(item.get("updated_at") or item.get("created_at")),
    )


def from_check_run(item: dict[str, Any]) -> CommitStatus:
    """One check run (``name``/``status``/``conclusion``) as a CommitStatus."""
    if item.get("status") != "completed":
        phase = Phase.PENDING
    elif item.get("conclusion") in _CHECK_SUCCESS:
        phase = Phase.SUCCESS
    else:
        phase = Phase.FAILURE
    output = item.get("output") or {}
    return CommitStatus(
        key=str(item["name"]),
        phase=phase,
        description=str(output.get("title") or item.get("conclusion") or item.get("status") or ""),
        url=str(item.get("html_url") or item.get("details_url") or ""),
        source=SOURCE_CHECK_RUN,
        updated_at=_time(item.get("completed_at") or item.get("started_at")),
    )


def latest_per_key(statuses: Iterable[CommitStatus]) -> list[CommitStatus]:
    """One status per key: the latest; on a tie, the first seen (GitHub lists newest first)."""
    latest: dict[str, CommitStatus] = {}
    for status in statuses:
        seen = latest.get(status.key)
        if seen is None or status.updated_at > seen.updated_at:
            latest[status.key] = status
    return list(latest.values())


def status_context(node: dict[str, Any]) -> CommitStatus:
    """A ``StatusContext`` as the REST read of the same status gives it."""
    return from_status(
        {
            "context": node.get("context"),
            "state": str(node.get("state") or "").lower(),
            "description": node.get("description"),
            "target_url": node.get("targetUrl"),
            "created_at": node.get("createdAt"),
        }
    )


def check_run_node(node: dict[str, Any]) -> CommitStatus:
    """A ``CheckRun`` as the REST read of the same check run gives it."""
    conclusion = node.get("conclusion")
    return from_check_run(
        {
            "name": node.get("name"),
            "status": str(node.get("status") or "").lower(),
            "conclusion": str(conclusion).lower() if conclusion else None,
            "output": {"title": node.get("title")},
            "html_url": node.get("url"),
            "details_url": node.get("detailsUrl"),
            "started_at": node.get("startedAt"),
            "completed_at": node.get("completedAt"),
        }
    )
