"""Webhook receivers for GitHub, GitLab, Forgejo/Gitea, Bitbucket (Cloud, Data Center) and
Azure DevOps: verify, de-duplicate, normalise, enqueue, answer 202.

The daemon mounts what ``build_routes`` returns::

    webhooks = build_routes(config=cfg, enqueue=queue.add, status_cache=cache,
                            sha_index=shas, state_dir=cfg.state_path())
    app = DirectPostApp(routes=[*webhooks, ...])  # promoter.http.direct, or any Starlette
    ...
    webhooks.close()  # at shutdown: closes the delivery log

Secrets are resolved once, here; a missing secret is a ConfigError at start-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from starlette.routing import BaseRoute, Route

from promoter.config import Config
from promoter.state.pulls import PullRequestCache
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from webhooks.deliveries.log import FILE_NAME, MIN_RETENTION, DeliveryLog
from webhooks.dispatch import Applied, Dispatcher, HasTip
from webhooks.events import (
    Event,
    Ignored,
    Ping,
    PullRequestChange,
    Push,
    PushBatch,
    RepoIdentity,
    StatusBatch,
    StatusChange,
)
from webhooks.index import StrategyIndex
from webhooks.plugin_events import PluginEvents
from webhooks.providers.azure_devops import AzureDevOps, ServiceHookAuth
from webhooks.providers.bitbucket_cloud import BitbucketCloud
from webhooks.providers.bitbucket_datacenter import BitbucketDataCenter
from webhooks.providers.forgejo import Forgejo
from webhooks.providers.github import GitHub
from webhooks.providers.gitlab import GitLab
from webhooks.receiver import Receiver
from webhooks.verify import GitHubSignature, GitLabToken, SignedDelivery

__all__ = [
    "Applied",
    "AzureDevOps",
    "BitbucketCloud",
    "BitbucketDataCenter",
    "DeliveryLog",
    "Dispatcher",
    "Event",
    "Forgejo",
    "GitHub",
    "GitHubSignature",
    "GitLab",
    "GitLabToken",
    "Ignored",
    "Ping",
    "PluginEvents",
    "PullRequestChange",
    "Push",
    "PushBatch",
    "Receiver",
    "RepoIdentity",
    "ServiceHookAuth",
    "SignedDelivery",
    "StatusBatch",
    "StatusChange",
    "StrategyIndex",
    "WebhookRoutes",
    "build_routes",
]

log = logging.getLogger("promoter.webhooks")


class WebhookRoutes(list[BaseRoute]):
    """The routes ``POST /webhooks/{github,gitlab,forgejo,bitbucket-cloud,bitbucket-datacenter,
    azure-devops}`` (a plain list).

    Also carries what the daemon may need afterwards: the receivers, the delivery
    log, the dispatcher (which plugins' events go through too), and ``close()`` for
    shutdown.
    """

    def __init__(
        self, receivers: list[Receiver], deliveries: DeliveryLog, dispatcher: Dispatcher
    ) -> None:
        super().__init__(
            Route(
                f"/webhooks/{r.provider.name}",
                r,
                methods=["POST"],
                name=f"webhook_{r.provider.name}",
            )
            for r in receivers
        )
        self.receivers = receivers
        self.deliveries = deliveries
        self.dispatcher = dispatcher

    @property
    def routes(self) -> list[BaseRoute]:
        return list(self)

    def close(self) -> None:
        """Close the delivery log; the routes must not serve requests afterwards."""
        self.deliveries.close()


def build_routes(
    *,
    config: Config,
    enqueue: Callable[[Iterable[str]], None],
    wake: Callable[[Iterable[str]], None] | None = None,
    status_cache: StatusCache,
    sha_index: ShaIndex,
    state_dir: Path,
    pr_cache: PullRequestCache | None = None,
    has_tip: HasTip | None = None,
) -> WebhookRoutes:
    """The webhook routes, ready to mount; resolves the secrets and opens the delivery log."""
    hooks = config.webhooks
    github = GitHub([s.resolve() for s in hooks.github.secrets])
    gitlab = GitLab(
        [s.resolve() for s in hooks.gitlab.tokens],
        [s.resolve() for s in hooks.gitlab.signing_secrets],
    )
    forgejo = Forgejo([s.resolve() for s in hooks.forgejo.secrets])
    cloud = BitbucketCloud([s.resolve() for s in hooks.bitbucket_cloud.secrets])
    datacenter = BitbucketDataCenter([s.resolve() for s in hooks.bitbucket_data_center.secrets])
    azure_hook = hooks.azure_devops
    azure_auth = ServiceHookAuth(
        username=azure_hook.username,
        passwords=[s.resolve() for s in azure_hook.passwords],
        header=azure_hook.header,
        tokens=[s.resolve() for s in azure_hook.tokens],
    )
    kinds = {config.provider(r.scm_provider).kind for r in config.repositories}
    for receiver in (cloud, datacenter):
        if not receiver and receiver.name in kinds:
            log.warning(
                "webhook has no secret, every delivery is refused",
                extra={"provider": receiver.name},
            )
    if not hooks.github.secrets and "github" in kinds:
        log.warning(
            "webhook has no secret, every delivery is refused", extra={"provider": "github"}
        )
    if not hooks.gitlab.tokens and not hooks.gitlab.signing_secrets and "gitlab" in kinds:
        log.warning(
            "webhook has no secret, every delivery is refused", extra={"provider": "gitlab"}
        )
    if not azure_auth and "azure-devops" in kinds:
        log.warning(
            "webhook has no secret, every delivery is refused", extra={"provider": "azure-devops"}
        )
    deliveries = DeliveryLog(
        Path(state_dir) / FILE_NAME, retention=max(hooks.delivery_retention, MIN_RETENTION)
    )
    dispatcher = Dispatcher(
        index=StrategyIndex(config),
        sha_index=sha_index,
        status_cache=status_cache,
        enqueue=enqueue,
        wake=wake,
        pr_cache=pr_cache,
        has_tip=has_tip,
    )
    receivers = [
        Receiver(p, dispatcher=dispatcher, deliveries=deliveries, max_body=hooks.max_body_bytes)
        for p in (github, gitlab, forgejo, cloud, datacenter, AzureDevOps(azure_auth))
    ]
    return WebhookRoutes(receivers, deliveries, dispatcher)
