"""``BitbucketCloudScm``: the Bitbucket Cloud SCM plugin.

Built by the registry from a ``bitbucketCloud`` provider: an app password or API token
(basic auth), an access token (bearer) or an OAuth consumer (client credentials). Every
REST call goes through ``ScmCalls`` (``promoter_scm_calls_total{provider="bitbucket-cloud"}``),
admitted by the credential's budget (``LIMITS``: Cloud's 1,000 requests an hour). Pull
requests have no labels on Bitbucket: the labels a strategy asks for are reported as not
kept. Branch tips and full SHAs come from git (``tips``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import requests

from promoter.config import BitbucketCloudProvider, Repository, ScmProvider, transport
from promoter.errors import ConfigError
from promoter.models import CommitStatus, Review
from scm_plugins.bitbucket import BitbucketApi, git_environment, http_origin, translate
from scm_plugins.bitbucket.pull_methods import PullRequestMethods
from scm_plugins.bitbucket_cloud.auth import Credentials
from scm_plugins.bitbucket_cloud.pulls import Pulls
from scm_plugins.bitbucket_cloud.statuses import Statuses, web_url
from scm_plugins.bitbucket_cloud.tips import Tips
from scm_plugins.budget import CredentialBudget, Limits
from scm_plugins.calls import ScmCalls

PROVIDER = "bitbucket-cloud"
PRODUCT = "Bitbucket Cloud"
LIMITS = Limits(
    window=3600.0,
    primary=1000,
    burst=0.1,
    concurrent=20,
    points_per_minute=1000,
    content_per_minute=1000,
    content_per_window=1000,
)
"""Bitbucket Cloud's limit on a credential's REST calls to repository data: 1,000 an hour,
over a rolling hour (scaled up for some plans and token kinds: the 429s say when)."""


class BitbucketCloudScm(PullRequestMethods):
    """Pull requests, commit statuses, reviews and git credentials for Bitbucket Cloud."""

    _pulls: Pulls

    name = PROVIDER
    folded_gate_keys: frozenset[str] = frozenset()

    def __init__(self, *, provider: ScmProvider, state_dir: str, limits: Limits = LIMITS) -> None:
        if provider.bitbucket_cloud is None:
            raise ConfigError([f"SCM provider {provider.name!r} has no bitbucketCloud section"])
        config: BitbucketCloudProvider = provider.bitbucket_cloud
        self._config = config
        wait = config.rate_limit_wait
        self.calls = ScmCalls(
            PROVIDER,
            lambda exc: translate(exc, product=PRODUCT, wait=wait),
            budget=CredentialBudget(limits),
        )
        self._credentials = Credentials(config, self.calls)
        session = requests.Session()
        if self._credentials.oauth is not None:
            session.auth = self._credentials.oauth
        self._api = BitbucketApi(
            url=config.url,
            calls=self.calls,
            session=session,
            username=self._credentials.username,
            password=self._credentials.password,
            token=self._credentials.token,
            renew=self._credentials.renew,
        )
        self._tips = Tips(self._git_env)
        self._pulls = Pulls(self._api, self._tips, strategy=config.merge_strategy)
        self._statuses = Statuses(self._api, web=web_url(config.url))

    def __repr__(self) -> str:
        return f"BitbucketCloudScm(url={self._config.url!r})"

    # --- pull requests (PullRequestMethods), and their reviews ------------------------

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        """Participants' approvals and requests for changes; groups are not looked up, so
        a review names no team."""
        return self._pulls.reviews(repo, number=number)

    # --- commit statuses -------------------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        self._tips.learn(sha)
        return self._statuses.get(repo, sha=sha, keys=keys)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self._tips.learn(sha)
        self._statuses.set(repo, sha=sha, status=status)

    # --- git -------------------------------------------------------------------------

    def _git_env(self, repo: Repository) -> Mapping[str, str]:
        if http_origin(repo.url) is None:  # a local path: no credentials to send
            return git_environment(repo.url, authorization="")
        return git_environment(repo.url, authorization=self._credentials.git_authorization())

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        transport.check(
            repo.url, allow_insecure=self._config.allow_insecure, what="the repository URL"
        )
        return self._git_env(repo)

    def set_budget_share(self, share: float) -> None:
        """Spend only ``share`` of the credential's limits (other replicas use the rest)."""
        if self.calls.budget is not None:
            self.calls.budget.share(share)

    def close(self) -> None:
        self._api.close()
