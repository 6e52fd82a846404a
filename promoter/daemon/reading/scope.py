"""What this daemon works on: its repositories (all of them, standalone) and their strategies.

Kubernetes mode with shards gives the daemon another ``owns`` (the repositories of the
shards this replica holds); ``every_repository`` is the standalone default.
"""

from __future__ import annotations

from promoter.config import Config


def every_repository(name: str) -> bool:
    """A standalone daemon works on every repository."""
    return True


def strategies_of(config: Config, repo_name: str) -> list[str]:
    """The names of the strategies of repository ``repo_name``, in the configuration's order."""
    return [s.name for s in config.promotion_strategies if s.repository == repo_name]
