"""The daemon's Runtime in a cluster: reconciles report back, and non-leaders forward work.

Only what differs from standalone mode is here: a reconcile's end is reported (so the
controller writes the strategy's status), and a replica that does not lead hands the
keys that webhooks and the API enqueue to ``forward`` instead of its own queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from starlette.types import ASGIApp

from promoter.config import Config
from promoter.daemon import Observer, Outcome, Runtime, StrategyView, Workers
from scm_plugins.protocol import ScmPlugin


class ClusterRuntime(Runtime):
    def __init__(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer],
        leading: Callable[[], bool],
        forward: Callable[[list[str]], None],
        reconciled: Callable[[str, StrategyView | None], None],
    ) -> None:
        super().__init__(config, plugins=plugins, observers=observers)
        self._leading = leading
        self._forward = forward
        self._reconciled = reconciled
        self.workers = Workers(self.queue, self._reconcile, count=config.daemon.workers)
        self.app: ASGIApp | None = None
        """The HTTP app around this runtime (API, webhooks); set by whoever serves it."""

    def _reconcile(self, key: str) -> Outcome:
        try:
            return self.reconciler.reconcile(key)
        finally:
            self._reconciled(key, self.reconciler.views.get(key))

    def enqueue(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if self._leading():
            super().enqueue(keys)
        else:
            self._forward(keys)

    def wake(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if self._leading():
            super().wake(keys)
        else:
            self._forward(keys)

    def close(self) -> None:
        """Stop if started; else release what construction opened (delivery log, plugins)."""
        if self.started:
            self.stop()
            return
        for closer in self._closers:
            closer.close()
        for plugin in self.plugins.values():
            plugin.close()
