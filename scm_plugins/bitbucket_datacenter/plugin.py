"""``BitbucketDataCenterScm``: the Bitbucket Data Center (and Server) SCM plugin.

Built by the registry from a ``bitbucketDataCenter`` provider: the instance's URL with
its context path, a personal or HTTP access token sent as a bearer, an optional CA
bundle for a private CA. Every REST call goes through ``ScmCalls``
(``promoter_scm_calls_total{provider="bitbucket-datacenter"}``), admitted by the token's
budget (``LIMITS``: Data Center's default rate limit of a token bucket of 60 requests
refilled at 5 a second, per user). Pull requests have no labels on Bitbucket: the
labels a strategy asks for are reported as not kept.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping

import requests

from promoter.config import BitbucketDataCenterProvider, Repository, ScmProvider, transport
from promoter.errors import ConfigError
from promoter.models import CommitStatus, Review
from scm_plugins.bitbucket import BitbucketApi, git_environment, translate
from scm_plugins.bitbucket.pull_methods import PullRequestMethods
from scm_plugins.bitbucket_datacenter.pulls import Pulls
from scm_plugins.bitbucket_datacenter.statuses import Statuses
from scm_plugins.budget import CredentialBudget, Limits
from scm_plugins.calls import ScmCalls

PROVIDER = "bitbucket-datacenter"
PRODUCT = "Bitbucket Data Center"
LIMITS = Limits(
    window=3600.0,
    primary=5 * 3600,
    burst=60 / (5 * 3600),
    concurrent=20,
    points_per_minute=5 * 60,
    content_per_minute=5 * 60,
    content_per_window=5 * 3600,
)
"""Data Center's default rate limit (Administration > Rate limiting): a bucket of 60
requests per user, refilled at 5 a second; an administrator may change both."""


class BitbucketDataCenterScm(PullRequestMethods):
    """Pull requests, build statuses, reviews and git credentials for one Data Center."""

    _pulls: Pulls

    name = PROVIDER
    folded_gate_keys: frozenset[str] = frozenset()

    @staticmethod
    def preflight(
        *, provider: ScmProvider, repositories: Iterable[Repository]
    ) -> Iterator[tuple[str | None, str]]:
        """Each repository names a project and a slug (``path: KEY/slug`` or its URL)."""
        for repo in repositories:
            if len([p for p in repo.full_path.split("/") if p]) < 2:
                yield repo.name, "Bitbucket Data Center needs path: PROJECT/slug"

    def __init__(self, *, provider: ScmProvider, state_dir: str, limits: Limits = LIMITS) -> None:
        if provider.bitbucket_data_center is None:
            raise ConfigError(
                [f"SCM provider {provider.name!r} has no bitbucketDataCenter section"]
            )
        config: BitbucketDataCenterProvider = provider.bitbucket_data_center
        self._config = config
        self._token = config.token.resolve()
        self.calls = ScmCalls(
            PROVIDER,
            lambda exc: translate(exc, product=PRODUCT),
            budget=CredentialBudget(limits),
        )
        session = requests.Session()
        session.verify = config.ca_bundle or True
        self._api = BitbucketApi(
            url=config.url, calls=self.calls, session=session, token=self._token
        )
        self._pulls = Pulls(self._api, strategy=config.merge_strategy)
        self._statuses = Statuses(self._api, mode=config.build_status_api, web_url=config.url)

    def __repr__(self) -> str:
        return f"BitbucketDataCenterScm(url={self._config.url!r})"

    # --- pull requests (PullRequestMethods), and their reviews ------------------------

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        """Reviewers' and participants' approvals (``APPROVED``) and requests for work
        (``NEEDS_WORK``); groups are not looked up, so a review names no team."""
        return self._pulls.reviews(repo, number=number)

    # --- build statuses --------------------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        return self._statuses.get(repo, sha=sha, keys=keys)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._statuses.set(repo, sha=sha, status=status)

    # --- git -------------------------------------------------------------------------

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        transport.check(
            repo.url, allow_insecure=self._config.allow_insecure, what="the repository URL"
        )
        return git_environment(
            repo.url, authorization=f"Bearer {self._token}", ca_bundle=self._config.ca_bundle
        )

    def set_budget_share(self, share: float) -> None:
        """Spend only ``share`` of the token's limits (other replicas use the rest)."""
        if self.calls.budget is not None:
            self.calls.budget.share(share)

    def close(self) -> None:
        self._api.close()
