"""Gates on GitHub: commit statuses and check runs read and normalised; the promoter's written.

The first read of a commit, and the re-read before a merge, take one GraphQL request
(``rollup``: statuses and check runs together, a point of the GraphQL budget); every
later read two conditional REST GETs (combined status, check runs), which GitHub does not
charge while nothing changed (``reads = "rest"``: every read by REST). Both are
normalised alike (``contexts``). The promoter's own gates are written as commit
statuses, or as check runs (``statusChecks: checkRuns``, App only). Every write asked
for is sent: the engine decides a write by comparing with what GitHub shows, so a
status someone else overwrote (a forged ``success``) is corrected, never skipped as
already written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator
from functools import partial
from typing import Any, Literal

from promoter import markup
from promoter.config import Repository
from promoter.models import CommitStatus, Phase
from scm_plugins.budget import Priority
from scm_plugins.github.api import RepoApi
from scm_plugins.github.client import answer_key
from scm_plugins.github.contexts import from_check_run, from_status, latest_per_key
from scm_plugins.github.rollup import read_rollup

PER_PAGE = 100
MAX_PAGES = 10
DESCRIPTION_LIMIT = 140
READ_ONCE = 200_000
"""Commits remembered as read once (by GraphQL): their next read goes by REST."""

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


class Statuses:
    """The CommitStatuses half of the GitHub plugin. Thread-safe."""

    def __init__(self, api: RepoApi, *, mode: Literal["statuses", "checkRuns"]) -> None:
        self._api = api
        self._mode = mode
        self.reads: Literal["auto", "rest"] = "auto"
        """``auto``: a commit's first read and the re-read before a merge by GraphQL, the
        others by REST; ``rest``: every read by REST (two calls, the way to compare)."""
        self._read_once: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        """Statuses and check runs of ``sha``. With ``keys`` (the re-read before a merge,
        ahead of other reads): one GraphQL request, or by REST the check runs alone when
        they hold every key (GitHub Actions gates are check runs)."""
        if keys is not None:
            if self.reads == "auto":
                return read_rollup(self._api, repo, sha, Priority.PRE_MERGE_READ)
            checks = self._check_runs(repo, sha, Priority.PRE_MERGE_READ)
            if set(keys) <= {c.key for c in checks}:
                return latest_per_key(checks)
            return latest_per_key(self._statuses(repo, sha, Priority.PRE_MERGE_READ) + checks)
        if self.reads == "auto" and self._first_read(repo, sha):
            return read_rollup(self._api, repo, sha)
        found = self._statuses(repo, sha)
        return latest_per_key(found + self._check_runs(repo, sha))

    def _first_read(self, repo: Repository, sha: str) -> bool:
        """Whether ``sha`` is read for the first time (it is remembered as read)."""
        key = (repo.full_path, sha)
        with self._lock:
            if key in self._read_once:
                return False
            self._read_once[key] = None
            if len(self._read_once) > READ_ONCE:
                self._read_once.popitem(last=False)
        return True

    def forget(self, repo: Repository, shas: Collection[str]) -> None:
        """No strategy tracks these commits any more: a later read is a first one."""
        with self._lock:
            for sha in shas:
                self._read_once.pop((repo.full_path, sha), None)

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
