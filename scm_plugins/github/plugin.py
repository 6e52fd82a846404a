"""The GitHub SCM plugin: pull requests, commit statuses and check runs, git credentials.

Built by the registry from a ``github`` provider (github.com, or GitHub Enterprise
Server through ``url``), with a personal / fine-grained token or a GitHub App.
Every HTTP call goes through ``ScmCalls`` (``promoter_scm_calls_total{provider="github"}``),
admitted by the credential's budget (``limits``: GitHub's primary and secondary limits;
a benchmark passes them scaled).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from promoter.config import GitHubProvider, Repository, ScmProvider, transport
from promoter.errors import ConfigError
from promoter.models import CommitStatus, PullRequest, QueueEntry, Review, Verification
from scm_plugins.budget import CredentialBudget, Limits
from scm_plugins.calls import ScmCalls
from scm_plugins.github.api import RepoApi
from scm_plugins.github.auth import (
    AppCredentials,
    Credentials,
    TokenCredentials,
    checked,
    git_environment,
)
from scm_plugins.github.client import GitHubClient, answer_key
from scm_plugins.github.deployments import GitHubDeployments
from scm_plugins.github.errors import translate
from scm_plugins.github.limits import GITHUB_LIMITS
from scm_plugins.github.pulls import Pulls
from scm_plugins.github.queue import GitHubQueue
from scm_plugins.github.reviews import Reviews
from scm_plugins.github.statuses import Statuses
from scm_plugins.protocol import DeploymentState


class GitHubScm:
    """An ``ScmPlugin`` for GitHub and GitHub Enterprise Server."""

    name = "github"
    folded_gate_keys: frozenset[str] = frozenset()
    merge_queue_scope: Literal["branch", "repository"] = "branch"

    def __init__(
        self, *, provider: ScmProvider, state_dir: str, limits: Limits = GITHUB_LIMITS
    ) -> None:
        if provider.github is None:
            raise ConfigError([f"SCM provider {provider.name!r} has no github section"])
        config: GitHubProvider = provider.github
        self._allow_insecure = config.allow_insecure
        self.calls = ScmCalls("github", translate, budget=CredentialBudget(limits))
        self._client = GitHubClient(base_url=config.url, calls=self.calls)
        credentials: Credentials
        if config.app is not None:
            credentials = AppCredentials(app=config.app, client=self._client)
        else:
            assert config.token is not None
            credentials = TokenCredentials(
                checked(config.token.resolve(), where=config.token.describe())
            )
        self._credentials = credentials
        api = RepoApi(
            client=self._client, credentials=credentials, renewable=config.app is not None
        )
        self._api = api
        self._pulls = Pulls(api, merge_method=config.merge_method)
        self._statuses = Statuses(api, mode=config.status_checks)
        self._reviews = Reviews(api)
        self._deployments = GitHubDeployments(api)
        self._queue = GitHubQueue(api)

    # --- PullRequests ----------------------------------------------------------------

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        return self._pulls.find_open(repo=repo, head=head, base=base)

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
        return self._pulls.open(
            repo=repo, head=head, base=base, title=title, body=body, labels=labels
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
        return self._pulls.update(repo=repo, number=number, title=title, body=body, labels=labels)

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        return self._pulls.merge(
            repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
        )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        self._pulls.close(repo=repo, number=number, comment=comment)

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._pulls.comment(repo=repo, number=number, body=body)

    # --- CommitStatuses --------------------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        return self._statuses.get(repo=repo, sha=sha, keys=keys)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._statuses.set(repo=repo, sha=sha, status=status)

    def forget_commits(self, *, repo: Repository, shas: Collection[str]) -> None:
        """Let go of the answers kept for conditional reads of these commits (their
        statuses, check runs and signature): no strategy tracks them any more."""
        self._statuses.forget(repo, shas)
        keys = [key for sha in shas for key in self._statuses.answer_keys(repo, sha)]
        keys += [answer_key(f"/repos/{repo.full_path}/commits/{sha}") for sha in shas]
        self._api.client.forget(keys)

    # --- GitCredentials --------------------------------------------------------------

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        return self._reviews.get(repo=repo, number=number, teams=teams)

    def enqueue_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str
    ) -> QueueEntry:
        return self._queue.enqueue(repo=repo, number=number, expected_head_sha=expected_head_sha)

    def queue_entry(self, *, repo: Repository, number: int) -> QueueEntry:
        return self._queue.entry(repo=repo, number=number)

    def dequeue_pull_request(self, *, repo: Repository, number: int) -> QueueEntry:
        return self._queue.dequeue(repo=repo, number=number)

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        return self._queue.required(repo=repo, branch=branch)

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
        return self._deployments.create(
            repo=repo,
            environment=environment,
            ref=ref,
            sha=sha,
            description=description,
            url=url,
            log_url=log_url,
        )

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
        self._deployments.status(
            repo=repo,
            deployment_id=deployment_id,
            environment=environment,
            state=state,
            description=description,
            url=url,
            log_url=log_url,
        )

    def request_reviewers(
        self, *, repo: Repository, number: int, users: Collection[str], teams: Collection[str]
    ) -> None:
        self._pulls.request_reviewers(
            repo=repo, number=number, users=list(users), teams=list(teams)
        )

    def commit_verification(self, *, repo: Repository, sha: str) -> Verification:
        """GitHub's verdict on ``sha``'s signature (``GET /commits/{sha}``, conditional)."""
        data = self._api.call(
            repo,
            "get_commit",
            "GET",
            f"/commits/{sha}",
            conditional=True,
            keep=lambda d: (d.get("commit") or {}).get("verification") or {},
            sha=sha,
        )
        return Verification(
            verified=bool(data.get("verified")), reason=str(data.get("reason") or "")
        )

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        transport.check(repo.url, allow_insecure=self._allow_insecure, what="the repository URL")
        return git_environment(repo=repo, token=lambda: self._credentials.token(repo=repo))

    def set_budget_share(self, share: float) -> None:
        """Spend only ``share`` of the credential's limits (other replicas use the rest)."""
        if self.calls.budget is not None:
            self.calls.budget.share(share)

    def close(self) -> None:
        self._client.close()
