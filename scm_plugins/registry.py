"""Builds SCM plugins by name: built-ins and the ``promoter.scm_plugins`` entry-point group."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from promoter.config import ScmProvider
from promoter.errors import ConfigError
from scm_plugins.protocol import PluginFactory, ScmPlugin

BUILTIN = {
    "local": "scm_plugins.local:LocalScm",
    "github": "scm_plugins.github:GitHubScm",
    "gitlab": "scm_plugins.gitlab:GitLabScm",
    "plugin": "scm_plugins.external:ExternalScm",  # any executable speaking promoter.scm/v1
}


def factory(kind: str) -> PluginFactory:
    """The factory registered for ``kind`` (entry points win over built-ins)."""
    for ep in entry_points(group="promoter.scm_plugins"):
        if ep.name == kind:
            loaded: PluginFactory = ep.load()
            return loaded
    target = BUILTIN.get(kind)
    if target is None:
        raise ConfigError([f"no SCM plugin named {kind!r} is installed"])
    module, _, attr = target.partition(":")
    built: PluginFactory = getattr(importlib.import_module(module), attr)
    return built


def build_plugin(provider: ScmProvider, *, state_dir: str) -> ScmPlugin:
    """A plugin instance for one configured provider."""
    return factory(provider.kind)(provider=provider, state_dir=state_dir)
