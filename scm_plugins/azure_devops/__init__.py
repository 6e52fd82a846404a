"""The Azure DevOps SCM plugin (Services and Server): pull requests, statuses, votes, git.

``AzureDevOpsScm(provider=..., state_dir=...)`` is the factory the registry calls; the
same plugin serves ``promoter.scm/v1.1`` out of process as ``promoter-scm-azure-devops``.
"""

from scm_plugins.azure_devops.plugin import AzureDevOpsScm

__all__ = ["AzureDevOpsScm"]
