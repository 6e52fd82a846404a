"""SCM plugins: the protocol, the counted-call helper, the registry and the implementations."""

from scm_plugins.protocol import CommitStatuses, GitCredentials, PullRequests, ScmPlugin
from scm_plugins.registry import build_plugin

__all__ = ["CommitStatuses", "GitCredentials", "PullRequests", "ScmPlugin", "build_plugin"]
