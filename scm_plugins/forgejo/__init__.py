"""The Forgejo / Gitea SCM plugin, run out of process as ``promoter-scm-forgejo``."""

from scm_plugins.forgejo.plugin import ForgejoScm

__all__ = ["ForgejoScm"]
