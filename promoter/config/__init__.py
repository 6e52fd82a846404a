"""The configuration: pydantic models of promoter.yaml, their loader, secrets and durations.

Everything else receives a validated ``Config``; nothing below reads files or the environment.
"""

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
    LocalMergeQueue,
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
    "LocalMergeQueue",
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
