"""The embedded local SCM plugin (the default: no tokens, everything on one machine)."""

from scm_plugins.local.plugin import LocalScm, repository_path

__all__ = ["LocalScm", "repository_path"]
