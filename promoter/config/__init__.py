"""The configuration: pydantic models of promoter.yaml, their loader, secrets and durations.

Everything else receives a validated ``Config``; nothing below reads files or the environment.

Importing the package costs nothing until a name is used (PEP 562): each name is
loaded from its module on first use, so that a command that needs the table of
operations or the name lookup does not load every pydantic model of the file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from promoter.config.access import Access, ApiToken, Grant, Proxy, Role
    from promoter.config.bitbucket import (
        BitbucketCloudProvider,
        BitbucketDataCenterProvider,
        BitbucketOAuth,
    )
    from promoter.config.durations import Duration, parse_duration
    from promoter.config.gates import GateSpec
    from promoter.config.loader import json_schema, load_config, parse_config
    from promoter.config.models import (
        AzureDevOpsWebhook,
        BitbucketWebhook,
        Config,
        Daemon,
        ForgejoWebhook,
        GitHubWebhook,
        GitLabWebhook,
        Webhooks,
    )
    from promoter.config.names import environment_branch, environment_index, short_name
    from promoter.config.operations import (
        OPERATIONS,
        ROLES,
        STRATEGY_OPERATION,
        STRATEGY_OPERATIONS,
        Argument,
        Operation,
        operation,
    )
    from promoter.config.providers import (
        AzureDevOpsProvider,
        ExternalPlugin,
        GitHubApp,
        GitHubProvider,
        GitLabProvider,
        LocalProvider,
        ScmProvider,
    )
    from promoter.config.secrets import SecretRef
    from promoter.config.strategies import (
        AutoRevert,
        Environment,
        PromotionStrategy,
        Repository,
        StatusKey,
    )

HOMES = {
    "access": (
        "Access",
        "ApiToken",
        "Grant",
        "Proxy",
        "Role",
    ),
    "bitbucket": (
        "BitbucketCloudProvider",
        "BitbucketDataCenterProvider",
        "BitbucketOAuth",
    ),
    "durations": (
        "Duration",
        "parse_duration",
    ),
    "gates": ("GateSpec",),
    "loader": (
        "json_schema",
        "load_config",
        "parse_config",
    ),
    "models": (
        "AzureDevOpsWebhook",
        "BitbucketWebhook",
        "Config",
        "Daemon",
        "ForgejoWebhook",
        "GitHubWebhook",
        "GitLabWebhook",
        "Webhooks",
    ),
    "names": (
        "environment_branch",
        "environment_index",
        "short_name",
    ),
    "operations": (
        "OPERATIONS",
        "ROLES",
        "STRATEGY_OPERATION",
        "STRATEGY_OPERATIONS",
        "Argument",
        "Operation",
        "operation",
    ),
    "providers": (
        "AzureDevOpsProvider",
        "ExternalPlugin",
        "GitHubApp",
        "GitHubProvider",
        "GitLabProvider",
        "LocalProvider",
        "ScmProvider",
    ),
    "secrets": ("SecretRef",),
    "strategies": (
        "AutoRevert",
        "Environment",
        "PromotionStrategy",
        "Repository",
        "StatusKey",
    ),
}
"""Each module of the package and the public names it holds."""

_WHERE = {name: module for module, names in HOMES.items() for name in names}

__all__ = [
    "OPERATIONS",
    "ROLES",
    "STRATEGY_OPERATION",
    "STRATEGY_OPERATIONS",
    "Access",
    "ApiToken",
    "Argument",
    "AutoRevert",
    "AzureDevOpsProvider",
    "AzureDevOpsWebhook",
    "BitbucketCloudProvider",
    "BitbucketDataCenterProvider",
    "BitbucketOAuth",
    "BitbucketWebhook",
    "Config",
    "Daemon",
    "Duration",
    "Environment",
    "ExternalPlugin",
    "ForgejoWebhook",
    "GateSpec",
    "GitHubApp",
    "GitHubProvider",
    "GitHubWebhook",
    "GitLabProvider",
    "GitLabWebhook",
    "Grant",
    "LocalProvider",
    "Operation",
    "PromotionStrategy",
    "Proxy",
    "Repository",
    "Role",
    "ScmProvider",
    "SecretRef",
    "StatusKey",
    "Webhooks",
    "environment_branch",
    "environment_index",
    "json_schema",
    "load_config",
    "operation",
    "parse_config",
    "parse_duration",
    "short_name",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
