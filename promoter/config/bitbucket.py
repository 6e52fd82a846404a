"""The Bitbucket providers of ``scmProviders``: Bitbucket Cloud (``bitbucketCloud``) and
Bitbucket Data Center (``bitbucketDataCenter``), with their credentials and merge settings.

Secrets are ``SecretRef``s, resolved by the plugin when it starts, never written inline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.secrets import SecretRef
from promoter.config.transport import insecure, refusal

ALLOW_INSECURE = (
    "Let the token travel over plain http:// to a host that is not loopback (the API URL "
    "and the repositories' URLs). For a test instance only: anyone on the path reads it."
)
API_TOKEN_GIT_USER = "x-bitbucket-api-token-auth"
"""The user name git gives with an Atlassian API token (an e-mail address is no git user)."""
ACCESS_TOKEN_GIT_USER = "x-token-auth"
"""The user name git gives with an OAuth or a repository/project/workspace access token."""

CloudMergeStrategy = Literal["merge_commit", "squash", "fast_forward"]
DataCenterMergeStrategy = Literal[
    "no-ff", "ff", "ff-only", "squash", "squash-ff-only", "rebase-no-ff", "rebase-ff-only"
]


def _ca_bundle(value: str | None) -> str | None:
    if value is not None:
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValueError(f"caBundle {value} is not a file")
        if b"-----BEGIN CERTIFICATE-----" not in path.read_bytes()[:4096]:
            raise ValueError(f"caBundle {value} holds no PEM certificate")
    return value


class BitbucketOAuth(Spec):
    """An OAuth consumer of a workspace: the client-credentials grant, one token at a time."""

    client_id: SecretRef = Field(description="The consumer's key.")
    client_secret: SecretRef = Field(description="The consumer's secret.")
    token_url: str = Field(
        default="https://bitbucket.org/site/oauth2/access_token",
        description="Where access tokens are asked for.",
    )


class BitbucketCloudProvider(Spec):
    """Bitbucket Cloud: exactly one of ``password`` (with ``username``), ``oauth`` or
    ``accessToken``."""

    url: str = Field(default="https://api.bitbucket.org", description="The REST API's base URL.")
    username: str | None = Field(
        default=None,
        description="With password: the Bitbucket username (app password) or the Atlassian "
        "account's e-mail (API token).",
    )
    password: SecretRef | None = Field(
        default=None, description="An app password or an API token, sent with basic auth."
    )
    oauth: BitbucketOAuth | None = Field(
        default=None, description="An OAuth consumer (client credentials)."
    )
    access_token: SecretRef | None = Field(
        default=None,
        description="A repository, project or workspace access token, sent as a bearer token.",
    )
    git_username: str | None = Field(
        default=None,
        description="The user git gives with the secret; default: the username (an app "
        f"password), {API_TOKEN_GIT_USER} (an API token: a username with an @), "
        f"{ACCESS_TOKEN_GIT_USER} (OAuth, access token).",
    )
    merge_strategy: CloudMergeStrategy = Field(
        default="merge_commit", description="How Bitbucket merges a promotion pull request."
    )
    rate_limit_wait: Duration = Field(
        default=60.0,
        description="How long calls wait after a 429, which says no time (the hourly limit "
        "rolls: room comes back as the hour's oldest calls leave it).",
    )
    allow_insecure: bool = Field(default=False, description=ALLOW_INSECURE)

    @model_validator(mode="after")
    def _one_credential(self) -> BitbucketCloudProvider:
        if insecure(self.url) and not self.allow_insecure:
            raise ValueError(refusal(self.url, "url"))
        given = [self.password is not None, self.oauth is not None, self.access_token is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of password (with username), oauth or accessToken")
        if self.password is not None and not self.username:
            raise ValueError("password needs username")
        if self.oauth is not None and insecure(self.oauth.token_url) and not self.allow_insecure:
            raise ValueError(refusal(self.oauth.token_url, "oauth.tokenUrl"))
        return self

    def git_user(self) -> str:
        """The user name git authenticates with (see ``gitUsername``)."""
        if self.git_username:
            return self.git_username
        if self.password is not None and self.username:
            return API_TOKEN_GIT_USER if "@" in self.username else self.username
        return ACCESS_TOKEN_GIT_USER


class BitbucketDataCenterProvider(Spec):
    """Bitbucket Data Center (or Server): a personal or HTTP access token, sent as a bearer."""

    url: str = Field(
        description="The instance's base URL, with its context path if it has one "
        "(https://git.example.com/bitbucket)."
    )
    token: SecretRef = Field(description="A personal or HTTP access token (project/repository).")
    ca_bundle: str | None = Field(
        default=None, description="Path to a PEM CA bundle (a self-signed or private CA)."
    )
    merge_strategy: DataCenterMergeStrategy | None = Field(
        default=None,
        description="The merge strategy id; default: the repository's own default.",
    )
    build_status_api: Literal["auto", "commits", "legacy"] = Field(
        default="auto",
        description="Where build statuses live: the commits builds API of 7.4 and later, the "
        "older /rest/build-status/1.0, or auto (the first, the second when it is missing).",
    )
    allow_insecure: bool = Field(default=False, description=ALLOW_INSECURE)

    @model_validator(mode="after")
    def _https(self) -> BitbucketDataCenterProvider:
        if insecure(self.url) and not self.allow_insecure:
            raise ValueError(refusal(self.url, "url"))
        return self

    @field_validator("ca_bundle")
    @classmethod
    def _ca(cls, value: str | None) -> str | None:
        return _ca_bundle(value)
