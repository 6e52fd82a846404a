"""The GitHub SCM plugin (github.com and GitHub Enterprise Server); built by the registry."""

from scm_plugins.github.plugin import GitHubScm

__all__ = ["GitHubScm"]
