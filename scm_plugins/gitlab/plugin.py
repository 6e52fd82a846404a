"""``GitLabScm``: the GitLab SCM plugin (gitlab.com or self-managed), built by the registry.

One python-gitlab client per provider, shared by the daemon's workers. Projects
are addressed lazily (no GET of the project) and cached per repository.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Collection, Mapping
from typing import Literal

from gitlab.v4.objects import Project

from promoter.config import GitLabProvider, Repository, ScmProvider, transport
from promoter.errors import ConfigError
from promoter.models import CommitStatus, PullRequest, QueueEntry, Review
from scm_plugins.calls import ScmCalls
from scm_plugins.gitlab import credentials, statuses
from scm_plugins.gitlab.approvals import Approvals
from scm_plugins.gitlab.client import connect
from scm_plugins.gitlab.errors import translate
from scm_plugins.gitlab.merge_requests import MergeRequests
from scm_plugins.gitlab.reviewers import GitLabReviewers
from scm_plugins.gitlab.trains import MergeTrains
from scm_plugins.protocol import DeploymentState

DEPLOYMENT_STATUS = {"in_progress": "running", "success": "success", "failure": "failed"}
"""GitLab's word for each deployment state; an inactive one needs no call (GitLab shows the
environment's latest deployment, and keeps older ones as they were)."""

PROVIDER = "gitlab"


class GitLabScm:
    """Merge requests, commit statuses, pipelines and git credentials for one GitLab."""

    name = PROVIDER
    merge_queue_scope: Literal["branch", "repository"] = "repository"

    def __init__(self, *, provider: ScmProvider, state_dir: str) -> None:
        if provider.gitlab is None:
            raise ConfigError([f"scm provider {provider.name!r} has no gitlab section"])
        self._config: GitLabProvider = provider.gitlab
        self._token = self._config.token.resolve()
        self._calls = ScmCalls(PROVIDER, functools.partial(translate, secret=self._token))
        self._gl = connect(
            url=self._config.url,
            token=self._token,
            ca_bundle=self._config.ca_bundle,
            calls=self._calls,
        )
        self._mrs = MergeRequests(calls=self._calls, squash=self._config.squash)
        self._approvals = Approvals(calls=self._calls, gl=self._gl)
        self._trains = MergeTrains(calls=self._calls, mrs=self._mrs)
        self._reviewers = GitLabReviewers(calls=self._calls, gl=self._gl)
        # GitLab adds the promoter's commit statuses to the SHA's latest pipeline.
        self.folded_gate_keys: frozenset[str] = frozenset({self._config.pipeline_gate_key})
        self._projects: dict[int | str, Project] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GitLabScm(url={self._config.url!r})"

    def _project(self, repo: Repository) -> Project:
        ref = credentials.project_ref(repo, instance_url=self._config.url)
        with self._lock:
            project = self._projects.get(ref)
            if project is None:
                project = self._gl.projects.get(ref, lazy=True)
                self._projects[ref] = project
            return project

    # --- pull requests ---------------------------------------------------------------

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        return self._mrs.find_open(self._project(repo), head=head, base=base)

    def open_pull_request(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        return self._mrs.open(
            self._project(repo), head=head, base=base, title=title, body=body, labels=labels
        )

    def update_pull_request(
        self,
        *,
        repo: Repository,
        number: int,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        return self._mrs.update(
            self._project(repo), number=number, title=title, body=body, labels=labels
        )

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        return self._mrs.merge(
            self._project(repo),
            number=number,
            expected_head_sha=expected_head_sha,
            message=message,
        )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        self._mrs.close(self._project(repo), number=number, comment=comment)

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._mrs.comment(self._project(repo), number=number, body=body)

    # --- commit statuses ---------------------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        return statuses.read_gates(
            self._project(repo),
            sha=sha,
            calls=self._calls,
            pipeline_key=self._config.pipeline_gate_key,
            keys=keys,
        )

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        statuses.write_status(self._project(repo), sha=sha, status=status, calls=self._calls)

    def request_reviewers(
        self, *, repo: Repository, number: int, users: Collection[str], teams: Collection[str]
    ) -> None:
        self._reviewers.request(self._project(repo), number=number, users=users, groups=teams)

    # --- merge trains --------------------------------------------------------------------

    def enqueue_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str
    ) -> QueueEntry:
        return self._trains.add(
            self._project(repo), number=number, expected_head_sha=expected_head_sha
        )

    def queue_entry(self, *, repo: Repository, number: int) -> QueueEntry:
        return self._trains.entry(self._project(repo), number=number)

    def dequeue_pull_request(self, *, repo: Repository, number: int) -> QueueEntry:
        return self._trains.remove(self._project(repo), number=number)

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        """The project's merge trains (one answer for every branch)."""
        return self._trains.enabled(self._project(repo))

    # --- deployments ---------------------------------------------------------------------

    def create_deployment(
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
        """``POST /projects/:id/deployments`` (running): one call; GitLab makes the environment
        the first time, and links the merge requests a successful deployment brought."""
        data = {"environment": environment, "sha": sha, "ref": ref, "tag": False}
        with self._calls.call("create_deployment", sha=sha):
            made = self._project(repo).deployments.create({**data, "status": "running"})
        return str(made.get_id())

    def set_deployment_status(
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
        status = DEPLOYMENT_STATUS.get(state)
        if status is None:
            return
        with self._calls.call("set_deployment_status", deployment=deployment_id):
            self._project(repo).deployments.update(int(deployment_id), {"status": status})

    # --- git credentials ---------------------------------------------------------------

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        return self._approvals.get(self._project(repo), number=number, groups=teams)

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        transport.check(
            repo.url, allow_insecure=self._config.allow_insecure, what="the repository URL"
        )
        return credentials.git_environment(
            repo,
            token=self._token,
            instance_url=self._config.url,
            ca_bundle=self._config.ca_bundle,
        )

    def close(self) -> None:
        self._gl.session.close()
