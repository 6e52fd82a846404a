"""Gates on GitHub: commit statuses and check runs read and normalised; the promoter's written.

Reading a SHA costs two conditional GETs (combined status, check runs), free when
nothing changed. Check runs count by name, latest run wins: success, neutral and
skipped are success; queued, in progress (and waiting, requested, pending) are
pending; any other conclusion is failure. Statuses: error and failure are failure.
The promoter's own gates are written as commit statuses, or as check runs
(``statusChecks: checkRuns``, App only). Every write asked for is sent: the engine
decides a write by comparing with what GitHub shows, so a status someone else
overwrote (a forged ``success``) is corrected, never skipped as already written.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from datetime import datetime
from functools import partial
from typing import Any, Literal

from promoter import markup
from promoter.config import Repository
from promoter.models import CommitStatus, Phase, utcnow
from scm_plugins.budget import Priority
from scm_plugins.github.api import RepoApi
from scm_plugins.github.client import answer_key

PER_PAGE = 100
MAX_PAGES = 10
DESCRIPTION_LIMIT = 140

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


_KEPT = {
    "statuses": ("context", "state", "description", "target_url", "updated_at", "created_at"),
    "check_runs": (
        "name",
        "status",
        "conclusion",
        "html_url",
        "details_url",
        "completed_at",
        "started_at",
    ),
}


def _slim(field: str, data: Any) -> dict[str, Any]:
    """A status or check-run page with only what ``from_status``/``from_check_run`` read."""
    kept = _KEPT[field]
    items = [
        {
            **{k: item.get(k) for k in kept},
            **(
                {"output": {"title": (item.get("output") or {}).get("title")}}
                if field == "check_runs"
                else {}
            ),
        }
        for item in data.get(field) or []
    ]
    return {field: items, "total_count": data.get("total_count")}


def latest_per_key(statuses: Iterable[CommitStatus]) -> list[CommitStatus]:
    """One status per key: the latest; on a tie, the first seen (GitHub lists newest first)."""
    latest: dict[str, CommitStatus] = {}
    for status in statuses:
        seen = latest.get(status.key)
        if seen is None or status.updated_at > seen.updated_at:
            latest[status.key] = status
    return list(latest.values())


class Statuses:
    """The CommitStatuses half of the GitHub plugin."""

    def __init__(self, api: RepoApi, *, mode: Literal["statuses", "checkRuns"]) -> None:
        self._api = api
        self._mode = mode

    def get(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        """Statuses and check runs of ``sha``; with ``keys``, the check runs alone when
        they hold every key (GitHub Actions gates are check runs): one call, not two."""
        if keys is not None:  # the re-read before a merge: ahead of other reads
            checks = self._check_runs(repo, sha, Priority.PRE_MERGE_READ)
            if set(keys) <= {c.key for c in checks}:
                return latest_per_key(checks)
            return latest_per_key(self._statuses(repo, sha, Priority.PRE_MERGE_READ) + checks)
        found = self._statuses(repo, sha)
        return latest_per_key(found + self._check_runs(repo, sha))

    def _statuses(
        self, repo: Repository, sha: str, priority: Priority | None = None
    ) -> list[CommitStatus]:
        pages = self._pages(repo, sha, "status", "statuses", priority)
        return [from_status(s) for s in pages]

    def _check_runs(
        self, repo: Repository, sha: str, priority: Priority | None = None
    ) -> list[CommitStatus]:
        runs = self._pages(repo, sha, "check-runs", "check_runs", priority)
        return sorted((from_check_run(r) for r in runs), key=lambda s: s.updated_at, reverse=True)

    def _pages(
        self, repo: Repository, sha: str, endpoint: str, field: str, priority: Priority | None
    ) -> list[dict[str, Any]]:
        operation = "get_combined_status" if endpoint == "status" else "get_check_runs"
        items: list[dict[str, Any]] = []
        for page in range(1, MAX_PAGES + 1):
            data = self._api.call(
                repo,
                operation,
                "GET",
                f"/commits/{sha}/{endpoint}",
                params={"per_page": PER_PAGE, "page": page},
                conditional=True,
                keep=partial(_slim, field),
                priority=priority,
                sha=sha,
            )
            batch = list(data.get(field) or [])
            items += batch
            if len(batch) < PER_PAGE or len(items) >= int(data.get("total_count") or 0):
                break
        return items

    def answer_keys(self, repo: Repository, sha: str) -> Iterator[str]:
        """The keys under which the client's ETag cache keeps the reads of ``sha``."""
        for endpoint in ("status", "check-runs"):
            path = f"/repos/{repo.full_path}/commits/{sha}/{endpoint}"
            for page in range(1, MAX_PAGES + 1):
                yield answer_key(path, {"per_page": PER_PAGE, "page": page})

    def set(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        if self._mode == "checkRuns":
            self._api.call(
                repo,
                "create_check_run",
                "POST",
                "/check-runs",
                body=_check_run(sha, status),
                sha=sha,
            )
        else:
            self._api.call(
                repo, "create_status", "POST", f"/statuses/{sha}", body=_status(status), sha=sha
            )


def _short(text: str) -> str:
    return text if len(text) <= DESCRIPTION_LIMIT else text[: DESCRIPTION_LIMIT - 1] + "…"


def _status(status: CommitStatus) -> dict[str, Any]:
    body: dict[str, Any] = {
        "state": status.phase.value,
        "context": status.key,
        "description": _short(status.description),
    }
    if status.url:
        body["target_url"] = status.url
    return body


def _check_run(sha: str, status: CommitStatus) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": status.key,
        "head_sha": sha,
        "output": {
            "title": _short(status.description or status.key),
            "summary": markup.markdown(status.description or status.key),
        },
    }
    if status.phase is Phase.PENDING:
        body["status"] = "in_progress"
    else:
        body["status"] = "completed"
        body["conclusion"] = status.phase.value
    if status.url:
        body["details_url"] = status.url
    return body
