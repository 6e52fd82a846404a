"""Builds SCM plugins by name: built-ins and the ``promoter.scm_plugins`` entry-point group."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from importlib.metadata import entry_points

from promoter.config import Config, ScmProvider
from promoter.errors import ConfigError
from scm_plugins.protocol import PluginFactory, ScmPlugin

BUILTIN = {
    "local": "scm_plugins.local:LocalScm",
    "github": "scm_plugins.github:GitHubScm",
    "gitlab": "scm_plugins.gitlab:GitLabScm",
    "bitbucket-cloud": "scm_plugins.bitbucket_cloud:BitbucketCloudScm",
    "bitbucket-datacenter": "scm_plugins.bitbucket_datacenter:BitbucketDataCenterScm",
    "azure-devops": "scm_plugins.azure_devops:AzureDevOpsScm",
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


def builtins() -> dict[str, str]:
    """Every plugin the promoter builds in process, by name, and what builds it (the
    ``promoter.scm_plugins`` entry points with the built-ins; ``plugin`` is the host of the
    out-of-process ones, not a plugin)."""
    found = {name: target for name, target in BUILTIN.items() if name != "plugin"}
    found.update({ep.name: ep.value for ep in entry_points(group="promoter.scm_plugins")})
    return dict(sorted(found.items()))


def build_plugin(provider: ScmProvider, *, state_dir: str) -> ScmPlugin:
    """A plugin instance for one configured provider."""
    return factory(provider.kind)(provider=provider, state_dir=state_dir)


YamlPath = tuple[str | int, ...]


def preflight(config: Config) -> Iterator[tuple[YamlPath, str]]:
    """What serving needs beyond a valid file, each problem at its path in promoter.yaml.

    Each provider's plugin is asked through its optional static method
    ``preflight(*, provider, repositories)``, which yields ``(repository name or None,
    problem)`` without starting anything: the local SCM checks that its repositories
    exist and are git repositories, an external plugin that its executable is found.
    ``promoter validate`` and ``promoter serve`` both run it, so they agree.
    """
    for i, provider in enumerate(config.scm_providers):
        try:
            plugin_class = factory(provider.kind)
        except ConfigError as exc:
            for problem in exc.problems:
                yield ("scmProviders", i, provider.kind), problem
            continue
        check = getattr(plugin_class, "preflight", None)
        if check is None:
            continue
        served = {r.name: j for j, r in enumerate(config.repositories)}
        repositories = [r for r in config.repositories if r.scm_provider == provider.name]
        for repo_name, problem in check(provider=provider, repositories=repositories):
            if repo_name is None:
                yield ("scmProviders", i, provider.kind), problem
            else:
                yield ("repositories", served[repo_name], "url"), problem
