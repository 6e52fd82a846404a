"""The composition root: the daemon's runtime, its SCM plugins, webhook receivers and app.

The only module that names the plugin registry and the webhook receivers; the core
below it knows neither.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.routing import BaseRoute

import webhooks
from promoter.config import Config
from promoter.config.loader import load_config
from promoter.daemon import Observer, Runtime, dora_counters
from promoter.errors import ConfigError
from promoter.http import AccessControl, Api, TokenReview, build_app
from promoter.models import utcnow
from promoter.notify import Notifier
from scm_plugins.external.events import EventSource
from scm_plugins.protocol import ScmPlugin
from scm_plugins.registry import build_plugin
from scm_plugins.registry import preflight as plugins_preflight
from scm_plugins.unavailable import UnavailableScm


def add_plugin_arguments(parser: Any) -> None:
    """``promoter plugins list|check`` (out-of-process SCM plugins), added to its parser."""
    from scm_plugins.external.cli import add_arguments

    add_arguments(parser)


def print_plugin_protocol_schema() -> int:
    """``promoter schema --plugin-protocol``: the JSON Schemas of ``promoter.scm/v1.1``."""
    from scm_plugins.external.cli import print_protocol_schema

    return print_protocol_schema()


def preflight(config: Config) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """What ``serve`` needs beyond a valid file and its secrets: what each provider's plugin
    checks (local repositories that exist, plugin executables that are found)."""
    yield from plugins_preflight(config)


def load_checked(path: str | Path) -> Config:
    """The config as ``serve`` loads it and ``validate`` checks it: valid, every secret read,
    and ``preflight`` passed; ConfigError with every problem at its file:line otherwise."""
    return load_config(path, resolve_secrets=True, checks=preflight)


def with_state_dir(config: Config) -> Config:
    """The config with its state directory resolved once, at start (relative to the current
    directory), created and writable, so that no relative path reaches git later.

    ConfigError saying what and where when it cannot be created or written.
    """
    path = config.state_path().absolute()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".promoter-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ConfigError(
            [f"daemon.stateDir: cannot use {path} as the state directory: {exc.strerror or exc}"]
        ) from exc
    daemon = config.daemon.model_copy(update={"state_dir": str(path)})
    return config.model_copy(update={"daemon": daemon})


def build_plugins(config: Config, *, lenient: bool = False) -> dict[str, ScmPlugin]:
    """One plugin instance per configured SCM provider, by name.

    ``lenient`` (for reading state, never for serving): a provider whose plugin cannot be
    built, for want of a secret say, gets a stand-in whose SCM calls fail with the reason.
    """
    state_dir = str(config.state_path())
    plugins: dict[str, ScmPlugin] = {}
    for provider in config.scm_providers:
        try:
            plugins[provider.name] = build_plugin(provider, state_dir=state_dir)
        except ConfigError as exc:
            if not lenient:
                raise
            reason = "; ".join(exc.problems)
            plugins[provider.name] = UnavailableScm(
                provider=provider.name, kind=provider.kind, reason=reason
            )
    return plugins


def notifier_for(config: Config) -> Notifier | None:
    """The notifier of ``notifications:``, or None when it names no sink."""
    if not config.notifications.sinks:
        return None
    d = config.daemon
    return Notifier(
        config.notifications,
        state_dir=config.state_path(),
        public_url=d.public_url or f"http://{d.host}:{d.port}",
    )


class Daemon:
    """A runtime with its plugins and webhook receivers, served by one starlette ``app``."""

    def __init__(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin] | None = None,
        observers: Iterable[Observer] = (),
        clock: Callable[[], datetime] = utcnow,
        runtime: Runtime | None = None,
        review: TokenReview | None = None,
    ) -> None:
        """``runtime``: one built already (Kubernetes mode's, which forwards when not leading);
        ``review``: Kubernetes mode's TokenReview of bearer tokens (``access.kubernetes``)."""
        config = with_state_dir(config)
        self.notifier = notifier_for(config) if runtime is None else None
        extra = [self.notifier] if self.notifier else []
        self.runtime = runtime or Runtime(
            config,
            plugins=plugins if plugins is not None else build_plugins(config),
            observers=[*observers, dora_counters.count, *extra],
            clock=clock,
        )
        if self.notifier is not None:
            self.notifier.watch(self.runtime.reconciler.all_views)
        self.api = Api(
            views=self.runtime,
            commands=self.runtime,
            access=AccessControl.from_config(config, review=review),
        )
        self.app: Starlette = build_app(
            self.api,
            extra_routes=self._webhook_routes(),
            start=self._start,
            stop=self._stop,
        )

    def _start(self) -> None:
        if self.notifier is not None:
            self.notifier.start()
        self.runtime.start()

    def _stop(self) -> None:
        self.runtime.stop()
        if self.notifier is not None:
            self.notifier.close()

    def _webhook_routes(self) -> list[BaseRoute]:
        rt = self.runtime
        mounted = webhooks.build_routes(
            config=rt.config,
            enqueue=rt.enqueue,
            wake=rt.wake,
            has_tip=rt.has_tip,
            status_cache=rt.status_cache,
            sha_index=rt.sha_index,
            state_dir=Path(rt.state_dir),
            pr_cache=rt.pr_cache,
        )
        rt.on_stop(mounted)
        self._plugin_events(mounted.dispatcher)
        return list(mounted.routes)

    def _plugin_events(self, dispatcher: webhooks.Dispatcher) -> None:
        """Plugins that send events (``promoter.scm/v1.1``) report them for the
        repositories they serve, through the webhooks' dispatcher."""
        rt = self.runtime
        for name, plugin in rt.plugins.items():
            served = [r for r in rt.config.repositories if r.scm_provider == name]
            if served and isinstance(plugin, EventSource):
                plugin.subscribe(served, webhooks.PluginEvents(dispatcher, provider=name))
