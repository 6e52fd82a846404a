"""The configuration: one YAML file (``promoter.yaml``) loaded into these pydantic models.

The same models are the schema of ``promoter schema`` and, in Kubernetes mode,
of the CRDs. Field names are camelCase in YAML and snake_case in Python. The SCM
providers are in ``providers``, the repositories and strategies in ``strategies``;
this module holds the webhooks, the daemon's settings and the whole file, ``Config``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, model_validator

from promoter.config.access import Access
from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.freezes import GlobalFreezeWindow
from promoter.config.notifications import Notifications
from promoter.config.providers import ScmProvider
from promoter.config.secrets import SecretRef
from promoter.config.strategies import PromotionStrategy, Repository


class GitHubWebhook(Spec):
    secrets: list[SecretRef] = Field(
        default_factory=list, description="Accepted secrets; several at once while rotating."
    )


class GitLabWebhook(Spec):
    tokens: list[SecretRef] = Field(
        default_factory=list, description="Accepted X-Gitlab-Token values."
    )
    signing_secrets: list[SecretRef] = Field(
        default_factory=list, description="whsec_ signing secrets for webhook-signature."
    )


class ForgejoWebhook(Spec):
    secrets: list[SecretRef] = Field(
        default_factory=list, description="HMAC secrets of X-Forgejo/X-Gitea-Signature."
    )


class BitbucketWebhook(Spec):
    secrets: list[SecretRef] = Field(
        default_factory=list,
        description="HMAC secrets of X-Hub-Signature; several at once while rotating.",
    )


class AzureDevOpsWebhook(Spec):
    """Azure DevOps signs nothing: a service hook proves itself by basic auth and/or a header."""

    username: str | None = Field(
        default=None, description="The service hook's basic authentication user name."
    )
    passwords: list[SecretRef] = Field(
        default_factory=list,
        description="Accepted basic authentication passwords; several at once while rotating.",
    )
    header: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9-]{1,64}$",
        description="A header the service hook sends (its HTTP headers), e.g. X-Promoter-Token.",
    )
    tokens: list[SecretRef] = Field(
        default_factory=list, description="Accepted values of header; several while rotating."
    )

    @model_validator(mode="after")
    def _header_and_tokens(self) -> AzureDevOpsWebhook:
        if bool(self.header) != bool(self.tokens):
            raise ValueError("give header and tokens together")
        if self.username is not None and not self.passwords:
            raise ValueError("username needs passwords")
        return self


class Webhooks(Spec):
    github: GitHubWebhook = Field(default_factory=GitHubWebhook)
    gitlab: GitLabWebhook = Field(default_factory=GitLabWebhook)
    forgejo: ForgejoWebhook = Field(default_factory=ForgejoWebhook)
    bitbucket_cloud: BitbucketWebhook = Field(default_factory=BitbucketWebhook)
    bitbucket_data_center: BitbucketWebhook = Field(default_factory=BitbucketWebhook)
    azure_devops: AzureDevOpsWebhook = Field(
        default_factory=AzureDevOpsWebhook, alias="azureDevOps"
    )
    max_body_bytes: int = Field(default=5 * 1024 * 1024, gt=0)
    delivery_retention: Duration = Field(default=2 * 86400.0, description="Keep delivery ids.")


class Daemon(Spec):
    state_dir: str = Field(default=".promoter", description="Mirrors, cache and local SCM data.")
    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    public_url: str | None = Field(
        default=None, description="URL people reach the daemon at, for links in status checks."
    )
    resync_interval: Duration = Field(default=300.0, description="Full resync of every strategy.")
    poll_interval: Duration = Field(default=3.0, description="Ref polling of local repositories.")
    status_cache_ttl: Duration = Field(default=60.0, description="Trust cached statuses this long.")
    settled_recheck: Duration = Field(
        default=3600.0,
        description=(
            "Read the statuses of settled commits (merged, recorded healthy, nothing"
            " waiting on them) and their environments' pull requests again at least this"
            " often: the periodic resync re-reads a share of them each time; so is what a"
            " strategy waits for while its repository's webhooks flow. A lost webhook is"
            " healed within it plus one resyncInterval (two resyncIntervals while the"
            " repository's webhooks are silent)."
        ),
    )
    workers: int = Field(default=4, ge=1, le=64)
    gate_workers: int = Field(
        default=8, ge=1, le=256, description="Threads running HTTP, Argo CD and Flux checks."
    )
    gate_calls_per_backend: int = Field(
        default=2,
        ge=1,
        le=64,
        description=(
            "Calls in flight at most per gate backend (an HTTP host, an Argo CD, the"
            " Kubernetes API, an SCM's reads and writes for gates): a hanging one holds"
            " no more threads than this."
        ),
    )
    max_backoff: Duration = Field(default=300.0, description="Cap of the retry backoff.")
    api_token: SecretRef | None = Field(
        default=None,
        description="One shared bearer token, the caller 'api-token' with the admin role"
        " (access.tokens names each caller instead).",
    )
    log_level: Literal["debug", "info", "warning", "error"] = "info"


class Config(Spec):
    """The whole of promoter.yaml."""

    _indexes: dict[str, tuple[list[Any], int, dict[str, Any]]] = PrivateAttr(default_factory=dict)

    scm_providers: list[ScmProvider] = Field(default_factory=list)
    repositories: list[Repository] = Field(default_factory=list)
    promotion_strategies: list[PromotionStrategy] = Field(default_factory=list)
    webhooks: Webhooks = Field(default_factory=Webhooks)
    daemon: Daemon = Field(default_factory=Daemon)
    notifications: Notifications = Field(default_factory=Notifications)
    freezes: list[GlobalFreezeWindow] = Field(
        default_factory=list,
        description="Freeze dates or ranges of every strategy (docs/freezes.md).",
    )
    access: Access = Field(default_factory=Access)

    def provider(self, name: str) -> ScmProvider:
        return next(p for p in self.scm_providers if p.name == name)

    def repository(self, name: str) -> Repository:
        found: Repository | None = self._named("repositories").get(name)
        if found is None:
            raise KeyError(f"no repository named {name!r}")
        return found

    def strategy(self, name: str) -> PromotionStrategy | None:
        found: PromotionStrategy | None = self._named("promotion_strategies").get(name)
        return found

    def _named(self, field: str) -> dict[str, Any]:
        """The items of list ``field`` by name, built once (10,000 strategies: no linear
        search per reconcile); built again for another list (``model_copy`` shares
        private attributes between copies) or one that changed length."""
        items: list[Any] = getattr(self, field)
        index = self._indexes.get(field)
        if index is None or index[0] is not items or index[1] != len(items):
            named: dict[str, Any] = {}
            for item in items:
                named.setdefault(item.name, item)  # the first of a name, as next() found
            index = (items, len(items), named)
            self._indexes[field] = index
        return index[2]

    def state_path(self) -> Path:
        return Path(self.daemon.state_dir).expanduser()
