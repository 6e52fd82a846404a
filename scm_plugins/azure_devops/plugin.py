"""``AzureDevOpsScm``: the Azure DevOps plugin (Services or Server), built by the registry.

Pull requests opened, updated, abandoned and completed with the head as the guard;
commit and pull-request statuses read as gates and the promoter's checks written on the
pull request; reviewer votes for the approval gate; git over HTTPS with the PAT. Every
call goes through ``ScmCalls`` (``promoter_scm_calls_total{provider="azure-devops"}``);
a 429 pauses every call of the PAT for its ``Retry-After``. Also served out of process as
``promoter-scm-azure-devops`` (``__main__``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence

from promoter.config import AzureDevOpsProvider, Repository, ScmProvider, transport
from promoter.errors import ConfigError
from promoter.models import CommitStatus, PullRequest, Review
from scm_plugins.azure_devops import convert, credentials
from scm_plugins.azure_devops.client import AzureClient
from scm_plugins.azure_devops.completion import Completion
from scm_plugins.azure_devops.errors import translate
from scm_plugins.azure_devops.pulls import Pulls, values
from scm_plugins.azure_devops.repos import Heads, Where, locate
from scm_plugins.azure_devops.statuses import Statuses
from scm_plugins.calls import ScmCalls

PROVIDER = "azure-devops"


def checked(token: str, *, where: str) -> str:
    """Refuse a PAT that would break an HTTP header (and leak into requests' errors)."""
    token = token.strip()
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise ConfigError([f"the Azure DevOps PAT from {where} is empty or holds whitespace"])
    return token


class AzureDevOpsScm:
    """Pull requests, statuses, votes and git credentials for one organization or collection."""

    name = PROVIDER
    folded_gate_keys: frozenset[str] = frozenset()

    def __init__(self, *, provider: ScmProvider, state_dir: str, token: str | None = None) -> None:
        """``token``: the PAT itself, when it came another way than the provider's secret
        reference (the out-of-process plugin receives it in ``initialize``)."""
        if provider.azure_devops is None:
            raise ConfigError([f"scm provider {provider.name!r} has no azureDevOps section"])
        self._config: AzureDevOpsProvider = provider.azure_devops
        where = self._config.token.describe()
        self._token = checked(token or self._config.token.resolve(), where=where)
        self.calls = ScmCalls(PROVIDER, translate)
        self._client = AzureClient(
            base_url=self._config.base_url,
            token=self._token,
            calls=self.calls,
            api_version=self._config.api_version,
            timeout=self._config.timeout,
            ca_bundle=self._config.ca_bundle,
        )
        self._heads = Heads()
        self._pulls = Pulls(self._client, self._heads)
        self._completion = Completion(
            self._client, self._heads, strategy=self._config.merge_strategy
        )
        self._statuses = Statuses(self._client, self._heads)

    def __repr__(self) -> str:
        return f"AzureDevOpsScm(url={self._config.base_url!r})"

    @staticmethod
    def preflight(
        *, provider: ScmProvider, repositories: Sequence[Repository]
    ) -> Iterator[tuple[str | None, str]]:
        """Each repository whose project and name neither its path nor its URL tells."""
        config = provider.azure_devops
        assert config is not None
        for repo in repositories:
            try:
                locate(repo, base_url=config.base_url, project=config.project)
            except ConfigError as exc:
                yield repo.name, "; ".join(exc.problems)

    def _where(self, repo: Repository) -> Where:
        return locate(repo, base_url=self._config.base_url, project=self._config.project)

    # --- pull requests -------------------------------------------------------------------

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        return self._pulls.find_open(self._where(repo), head=head, base=base)

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
            self._where(repo), head=head, base=base, title=title, body=body, labels=labels
        )

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        return self._pulls.update(
            self._where(repo), number=number, title=title, body=body, labels=labels
        )

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        return self._completion.merge(
            self._where(repo),
            number=number,
            expected_head_sha=expected_head_sha,
            message=message,
        )

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        self._pulls.close(self._where(repo), number=number, comment=comment)

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self._pulls.comment(self._where(repo), number=number, body=body)

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        """Each reviewer's vote that decides (10 approves, -10 rejects), with the groups the
        vote counts for (``votedFor``) as its teams. One call."""
        where = self._where(repo)
        data = self._client.request(
            "get_reviews", "GET", f"{where.api}/pullRequests/{number}/reviewers", pr=number
        )
        found = (convert.review(item) for item in values(data))
        return [review for review in found if review is not None]

    # --- statuses ------------------------------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        return self._statuses.get(self._where(repo), sha=sha, keys=keys)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._statuses.set(self._where(repo), sha=sha, status=status)

    def forget_commits(self, *, repo: Repository, shas: Collection[str]) -> None:
        """Let go of the answers kept for conditional reads of these commits' statuses."""
        where = self._where(repo)
        self._client.forget([key for sha in shas for key in self._statuses.answer_keys(where, sha)])

    # --- git -----------------------------------------------------------------------------

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        transport.check(
            repo.url, allow_insecure=self._config.allow_insecure, what="the repository URL"
        )
        return credentials.git_environment(
            repo_url=repo.url,
            base_url=self._config.base_url,
            token=self._token,
            ca_bundle=self._config.ca_bundle,
        )

    def close(self) -> None:
        self._client.close()
