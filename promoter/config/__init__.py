"""The configuration: pydantic models of promoter.yaml, their loader, secrets and durations.

Everything else receives a validated ``Config``; nothing below reads files or the environment.
"""

from promoter.config.access import Access, ApiToken, Grant, Proxy, Role
from promoter.config.durations import Duration, parse_duration
from promoter.config.gates import GateSpec
from promoter.config.loader import json_schema, load_config, parse_config
from promoter.config.models import (
    AzureDevOpsWebhook,
    Config,
    Daemon,
    ForgejoWebhook,
    GitHubWebhook,
    GitLabWebhook,
    Webhooks,
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

__all__ = [
    "Access",
    "ApiToken",
    "AutoRevert",
    "AzureDevOpsProvider",
    "AzureDevOpsWebhook",
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
    "PromotionStrategy",
    "Proxy",
    "Repository",
    "Role",
    "ScmProvider",
    "SecretRef",
    "StatusKey",
    "Webhooks",
    "json_schema",
    "load_config",
    "parse_config",
    "parse_duration",
]
