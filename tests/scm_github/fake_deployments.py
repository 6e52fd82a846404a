"""The fake GitHub's deployments and deployment statuses.

Bodies are PyGithub's recordings of GitHub's answers (``Repository.testCreateDeployment``,
``DeploymentStatus.testCreate``) with the fake's values filled in. As on GitHub: a status
for a deployment the repository does not have is 404, a state GitHub does not know is
422, a deployment of a SHA the repository lacks is 422; statuses list newest first.
"""

from __future__ import annotations

import itertools
import re
from abc import ABC, abstractmethod
from typing import Any

from . import fake_git
from .fake_state import NOT_FOUND, Answer, FakeRepo, Handler, now
from .genuine import Genuine

REPO = r"^/repos/([^/]+)/([^/]+)"
STATES = ("error", "failure", "inactive", "in_progress", "queued", "pending", "success")


class DeploymentRoutes(ABC):
    genuine: Genuine
    base_url: str
    deployments: dict[str, list[dict[str, Any]]]
    deployment_statuses: dict[int, list[dict[str, Any]]]

    @abstractmethod
    def _repo(self, owner: str, name: str) -> FakeRepo:
        """The repository or a 404, from the fake that mixes these routes in."""

    def deployment_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        self.deployments = {}
        self.deployment_statuses = {}
        self._deployment_ids = itertools.count(263877258)
        self._status_ids = itertools.count(388454671)
        return [
            ("POST", re.compile(REPO + r"/deployments$"), self._create, "repo"),
            ("GET", re.compile(REPO + r"/deployments$"), self._list, "repo"),
            ("POST", re.compile(REPO + r"/deployments/(\d+)/statuses$"), self._status, "repo"),
            ("GET", re.compile(REPO + r"/deployments/(\d+)/statuses$"), self._statuses, "repo"),
        ]

    def states_of(self, full_name: str, environment: str) -> list[list[str]]:
        """Each deployment of ``environment`` (oldest first) with its statuses' states
        (oldest first): what GitHub's Environments view shows."""
        return [
            [s["state"] for s in reversed(self.deployment_statuses.get(d["id"], []))]
            for d in self.deployments.get(full_name.lower(), [])
            if d["environment"] == environment
        ]

    def _create(self, owner: str, name: str, *, query: Any, body: Any) -> Answer:
        repo = self._repo(owner, name)
        ref = str(body.get("ref", ""))
        sha = (
            ref
            if fake_git.commit_exists(repo.git_dir, ref)
            else fake_git.branch_sha(repo.git_dir, ref)
        )
        if not sha:
            return 422, {}, {"message": f"No ref found for: {ref}"}
        deployment = self.genuine.replay("Repository.testCreateDeployment")[0].body
        deployment_id = next(self._deployment_ids)
        api = f"{self.base_url}/repos/{owner}/{name}"
        deployment.update(
            id=deployment_id,
            url=f"{api}/deployments/{deployment_id}",
            statuses_url=f"{api}/deployments/{deployment_id}/statuses",
            repository_url=api,
            sha=sha,
            ref=ref,
            environment=body.get("environment", "production"),
            original_environment=body.get("environment", "production"),
            description=body.get("description"),
            payload=body.get("payload", {}),
            transient_environment=bool(body.get("transient_environment", False)),
            created_at=now(),
            updated_at=now(),
        )
        self.deployments.setdefault(repo.full_name.lower(), []).append(deployment)
        return 201, {}, deployment

    def _list(self, owner: str, name: str, *, query: Any, body: Any) -> Answer:
        repo = self._repo(owner, name)
        found = [
            d
            for d in reversed(self.deployments.get(repo.full_name.lower(), []))
            if d["environment"] == query.get("environment", d["environment"])
        ]
        return 200, {}, found

    def _find(self, owner: str, name: str, deployment_id: str) -> dict[str, Any] | None:
        repo = self._repo(owner, name)
        return next(
            (
                d
                for d in self.deployments.get(repo.full_name.lower(), [])
                if d["id"] == int(deployment_id)
            ),
            None,
        )

    def _status(
        self, owner: str, name: str, deployment_id: str, *, query: Any, body: Any
    ) -> Answer:
        deployment = self._find(owner, name, deployment_id)
        if deployment is None:
            return 404, {}, dict(NOT_FOUND)
        if body.get("state") not in STATES:
            return 422, {}, {"message": "Validation Failed", "errors": ["state"]}
        status = self.genuine.replay("DeploymentStatus.testCreate")[0].body
        status_id = next(self._status_ids)
        status.update(
            id=status_id,
            url=f"{deployment['url']}/statuses/{status_id}",
            deployment_url=deployment["url"],
            state=body["state"],
            description=body.get("description", ""),
            environment=body.get("environment", deployment["environment"]),
            target_url=body.get("log_url", ""),
            log_url=body.get("log_url", ""),
            environment_url=body.get("environment_url", ""),
            created_at=now(),
            updated_at=now(),
        )
        self.deployment_statuses.setdefault(int(deployment_id), []).insert(0, status)
        return 201, {}, status

    def _statuses(self, owner: str, name: str, deployment_id: str, **_: Any) -> Answer:
        if self._find(owner, name, deployment_id) is None:
            return 404, {}, dict(NOT_FOUND)
        return 200, {}, self.deployment_statuses.get(int(deployment_id), [])
