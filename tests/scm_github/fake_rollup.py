"""The fake GitHub's ``statusCheckRollup``: a commit's statuses and check runs in one
GraphQL read, answered as GitHub's schema says (``tests/fixtures/github/graphql``).

``Commit.statusCheckRollup`` is null for a commit with neither; ``contexts`` lists the
latest status per context (``StatusContext``) and the latest check run per name
(``CheckRun``), with ``__typename``, in pages (``first``, ``after``, ``pageInfo``). An
unknown commit has no ``object``; an unknown repository is null with a ``NOT_FOUND``
error, as GitHub answers (status 200). Enum values are the schema's: the REST values in
capitals. Other GraphQL requests go to the merge queue's handler.
"""

from __future__ import annotations

import base64
import re
from abc import ABC, abstractmethod
from typing import Any

from . import fake_git
from .fake_state import Answer, FakeRepo, Handler


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:{index}".encode()).decode()


def _index(cursor: str | None) -> int:
    if not cursor:
        return 0
    return int(base64.b64decode(cursor).decode().removeprefix("cursor:"))


def _upper(value: Any) -> Any:
    return str(value).upper() if value else None


def status_context(status: dict[str, Any]) -> dict[str, Any]:
    """A stored REST status as a ``StatusContext`` node."""
    return {
        "__typename": "StatusContext",
        "context": status["context"],
        "state": _upper(status["state"]),
        "description": status.get("description"),
        "targetUrl": status.get("target_url"),
        "createdAt": status.get("created_at"),
    }


def check_run(run: dict[str, Any]) -> dict[str, Any]:
    """A stored REST check run as a ``CheckRun`` node."""
    return {
        "__typename": "CheckRun",
        "name": run["name"],
        "status": _upper(run["status"]),
        "conclusion": _upper(run.get("conclusion")),
        "title": (run.get("output") or {}).get("title"),
        "detailsUrl": run.get("details_url"),
        "url": run.get("html_url"),
        "startedAt": run.get("started_at"),
        "completedAt": run.get("completed_at"),
    }


class RollupRoutes(ABC):
    repositories: dict[str, FakeRepo]

    def rollup_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        return [("POST", re.compile(r"^/graphql$"), self._graphql_reads, "repo")]

    @abstractmethod
    def _graphql(self, *, query: Any, body: Any) -> Answer:
        """The merge queue's GraphQL handler."""

    def _graphql_reads(self, *, query: Any, body: Any) -> Answer:
        text = str((body or {}).get("query", ""))
        if "statusCheckRollup" in text and "contexts(" in text:
            return 200, {}, self._commit_rollup((body or {}).get("variables") or {})
        return self._graphql(query=query, body=body)

    def _commit_rollup(self, variables: dict[str, Any]) -> Any:
        owner, name, sha = variables["owner"], variables["name"], variables["sha"]
        repo = self.repositories.get(f"{owner}/{name}".lower())
        if repo is None:
            message = f"Could not resolve to a Repository with the name '{owner}/{name}'."
            error = {"type": "NOT_FOUND", "path": ["repository"], "message": message}
            return {"data": {"repository": None}, "errors": [error]}
        if not fake_git.commit_exists(repo.git_dir, sha):
            return {"data": {"repository": {"object": None}}}
        latest: dict[str, dict[str, Any]] = {}
        for status in repo.statuses.get(sha, []):
            latest.setdefault(status["context"], status)
        runs: dict[str, dict[str, Any]] = {}
        for run in repo.check_runs.get(sha, []):
            runs.setdefault(run["name"], run)
        nodes = [check_run(r) for r in runs.values()] + [status_context(s) for s in latest.values()]
        if not nodes:
            return {"data": {"repository": {"object": {"statusCheckRollup": None}}}}
        start, first = _index(variables.get("after")), int(variables["first"])
        page = nodes[start : start + first]
        more = start + first < len(nodes)
        contexts = {
            "pageInfo": {"hasNextPage": more, "endCursor": _cursor(start + len(page))},
            "nodes": page,
        }
        rollup = {"contexts": contexts}
        return {"data": {"repository": {"object": {"statusCheckRollup": rollup}}}}
