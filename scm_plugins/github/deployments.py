"""GitHub deployments: a promotion reported as a deployment to the environment, with its
statuses (in_progress, success, failure, inactive) linking back to the promotion PR.

Calls: a deployment 2 (create, then its in_progress status), each later status 1. The
deployment names the exact commit (``ref`` is the SHA: the branch moves on), asks GitHub
to merge nothing and to check no status (``auto_merge: false``, ``required_contexts``
empty), and its statuses never set older deployments inactive by themselves
(``auto_inactive: false``): the promoter marks the one it supersedes.
"""

from __future__ import annotations

from promoter.config import Repository
from scm_plugins.github.api import RepoApi
from scm_plugins.protocol import DeploymentState

MAX_DESCRIPTION = 140


class GitHubDeployments:
    def __init__(self, api: RepoApi) -> None:
        self._api = api

    def create(
        self,
        *,
        repo: Repository,
        environment: str,
        ref: str,
        sha: str,
        description: str,
        url: str,
        log_url: str,
    ) -> str:
        data = self._api.call(
            repo,
            "create_deployment",
            "POST",
            "/deployments",
            body={
                "ref": sha,
                "environment": environment,
                "description": description[:MAX_DESCRIPTION],
                "auto_merge": False,
                "required_contexts": [],
                "payload": {"branch": ref, "promoter": True},
                "transient_environment": False,
            },
            sha=sha,
        )
        deployment_id = str(data["id"])
        self.status(
            repo=repo,
            deployment_id=deployment_id,
            environment=environment,
            state="in_progress",
            description=description,
            url=url,
            log_url=log_url,
        )
        return deployment_id

    def status(
        self,
        *,
        repo: Repository,
        deployment_id: str,
        environment: str,
        state: DeploymentState,
        description: str,
        url: str,
        log_url: str,
    ) -> None:
        body = {
            "state": state,
            "description": description[:MAX_DESCRIPTION],
            "environment": environment,
            "auto_inactive": False,
        }
        if log_url:
            body["log_url"] = log_url
        if url:
            body["environment_url"] = url
        self._api.call(
            repo,
            "set_deployment_status",
            "POST",
            f"/deployments/{deployment_id}/statuses",
            body=body,
            deployment=deployment_id,
        )
