"""The fake GitHub's commit statuses and check runs: create, combined status, list.

A mixin of ``fake_routes.Routes``; it keeps GitHub's newest-first order and its
"latest per context / per name" views.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from typing import Any

from . import fake_git
from .fake_state import Answer, FakeRepo, now
from .genuine import Genuine


class StatusRoutes(ABC):
    genuine: Genuine
    _ids: itertools.count[int]

    @abstractmethod
    def repo(self, owner: str, name: str) -> FakeRepo | None:
        """The repository, from the fake that mixes these routes in."""

    @abstractmethod
    def _repo(self, owner: str, name: str) -> FakeRepo:
        """The repository or a 404, from the fake that mixes these routes in."""

    @abstractmethod
    def _checks_landed(self, full_name: str, sha: str) -> None:
        """A status or check run landed on ``sha`` (the merge queue may move)."""

    def post_status(self, full_name: str, sha: str, context: str, state: str, **extra: str) -> None:
        owner, name = full_name.split("/")
        self._create_status(
            owner, name, sha, query={}, body={"context": context, "state": state, **extra}
        )

    def post_check_run(
        self, full_name: str, sha: str, name: str, status: str, conclusion: str | None = None
    ) -> None:
        owner, repo = full_name.split("/")
        body = {"name": name, "head_sha": sha, "status": status, "conclusion": conclusion}
        self._create_check_run(owner, repo, query={}, body=body)

    # --- statuses and check runs ------------------------------------------------------

    def _create_status(self, owner: str, name: str, sha: str, *, query: Any, body: Any) -> Answer:
        repo = self._repo(owner, name)
        if not fake_git.commit_exists(repo.git_dir, sha):
            return 422, {}, {"message": f"No commit found for SHA: {sha}"}
        if body.get("state") not in ("error", "failure", "pending", "success"):
            return 422, {}, {"message": "Validation Failed", "errors": ["state"]}
        status = self.genuine.openapi("repos.create-commit-status.201")
        stamp = now()
        status.update(
            id=next(self._ids),
            state=body["state"],
            context=body.get("context", "default"),
            description=body.get("description"),
            target_url=body.get("target_url"),
            created_at=stamp,
            updated_at=stamp,
        )
        repo.statuses.setdefault(sha, []).insert(0, status)
        self._checks_landed(f"{owner}/{name}", sha)
        return 201, {}, status

    def _combined(self, owner: str, name: str, ref: str, *, query: Any, body: Any) -> Answer:
        repo = self.repo(owner, name)
        if repo is None or not fake_git.commit_exists(repo.git_dir, ref):
            return 404, {}, {"message": f"No commit found for SHA: {ref}"}
        latest: dict[str, dict[str, Any]] = {}
        for status in repo.statuses.get(ref, []):
            latest.setdefault(status["context"], status)
        items = [{k: v for k, v in s.items() if k != "creator"} for s in latest.values()]
        states = {s["state"] for s in items}
        overall = (
            "failure"
            if states & {"error", "failure"}
            else "pending"
            if "pending" in states or not items
            else "success"
        )
        answer = self.genuine.openapi("repos.get-combined-status-for-ref.200")
        per_page, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        answer.update(
            state=overall,
            statuses=items[(page - 1) * per_page : page * per_page],
            sha=ref,
            total_count=len(items),
        )
        return 200, {}, answer

    def _create_check_run(self, owner: str, name: str, *, query: Any, body: Any) -> Answer:
        repo = self._repo(owner, name)
        sha = str(body.get("head_sha", ""))
        if not fake_git.commit_exists(repo.git_dir, sha):
            return 422, {}, {"message": f"No commit found for SHA: {sha}"}
        status = body.get("status", "queued")
        if status == "completed" and not body.get("conclusion"):
            return 422, {}, {"message": "Validation Failed", "errors": ["conclusion"]}
        run = self.genuine.openapi("checks.create.201.example-of-completed-conclusion")
        stamp = now()
        run.update(
            id=next(self._ids),
            name=body["name"],
            head_sha=sha,
            status=status,
            conclusion=body.get("conclusion") if status == "completed" else None,
            details_url=body.get("details_url"),
            external_id=body.get("external_id", ""),
            started_at=stamp,
            completed_at=stamp if status == "completed" else None,
            output={**run["output"], **(body.get("output") or {"title": None, "summary": None})},
        )
        repo.check_runs.setdefault(sha, []).insert(0, run)
        self._checks_landed(f"{owner}/{name}", sha)
        return 201, {}, run

    def _checks(self, owner: str, name: str, ref: str, *, query: Any, body: Any) -> Answer:
        repo = self.repo(owner, name)
        if repo is None or not fake_git.commit_exists(repo.git_dir, ref):
            return 404, {}, {"message": f"No commit found for SHA: {ref}"}
        runs = repo.check_runs.get(ref, [])
        if query.get("filter", "latest") == "latest":
            latest: dict[str, dict[str, Any]] = {}
            for run in runs:
                latest.setdefault(run["name"], run)
            runs = list(latest.values())
        per_page, page = int(query.get("per_page", 30)), int(query.get("page", 1))
        return (
            200,
            {},
            {
                "total_count": len(runs),
                "check_runs": runs[(page - 1) * per_page : page * per_page],
            },
        )
