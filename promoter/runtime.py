"""The daemon's parts wired together: plugins, mirrors, caches, queue, workers, timers, app.

``Runtime(config).app`` is a starlette app whose lifespan starts the workers and
timers and, on shutdown (SIGTERM under uvicorn), stops taking work and waits for
the reconciles in flight, so nothing is left half-pushed.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from promoter.api import Api
from promoter.config import Config, Repository
from promoter.executor import Observer
from promoter.ledger import GitLedger
from promoter.mirrors import MirrorPool
from promoter.operations import Operations
from promoter.prcache import PullRequestCache
from promoter.reconciler import Reconciler
from promoter.scheduler import Scheduler, strategies_of
from promoter.statuscache import StatusCache
from promoter.tracking import ShaIndex
from promoter.workers import Workers
from promoter.workqueue import WorkQueue
from scm_plugins.protocol import ScmPlugin
from scm_plugins.registry import build_plugin

log = logging.getLogger("promoter.runtime")

LEDGER_FLUSH_INTERVAL = 1.0
"""Healthy records are pushed to the ledger in git at most this long after they happen."""


class Runtime:
    def __init__(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin] | None = None,
        observers: Iterable[Observer] = (),
    ) -> None:
        self.config = config
        self.state_dir = config.state_path()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.plugins = (
            plugins
            if plugins is not None
            else {
                p.name: build_plugin(p, state_dir=str(self.state_dir)) for p in config.scm_providers
            }
        )
        self.mirrors = MirrorPool(root=self.state_dir / "mirrors", credentials=self._credentials)
        self.status_cache = StatusCache(ttl=config.daemon.status_cache_ttl)
        self.sha_index = ShaIndex()
        self.pr_cache = PullRequestCache(max_age=config.daemon.resync_interval)
        self.ledger = GitLedger()
        self.queue = WorkQueue(max_delay=config.daemon.max_backoff)
        self.reconciler = Reconciler(
            config=config,
            plugins=self.plugins,
            mirrors=self.mirrors,
            status_cache=self.status_cache,
            sha_index=self.sha_index,
            ledger=self.ledger,
            pr_cache=self.pr_cache,
            status_url=self.public_url,
            observers=list(observers),
        )
        self.operations = Operations(self.reconciler)
        self.workers = Workers(self.queue, self.reconciler.reconcile, count=config.daemon.workers)
        self.scheduler = Scheduler(
            config, self.queue, self.mirrors, before_resync=self._forget_cached_reads
        )
        self.started = False
        self._closers: list[Any] = []
        self.app = Starlette(routes=self._routes(), lifespan=self._lifespan)

    @property
    def public_url(self) -> str:
        d = self.config.daemon
        return d.public_url or f"http://{d.host}:{d.port}"

    def _credentials(self, repo: Repository) -> dict[str, str]:
        return dict(self.plugins[repo.scm_provider].git_environment(repo=repo))

    def _routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [Route("/", self._index)]
        routes.extend(Api(self).routes())
        routes.extend(self._webhook_routes())
        return routes

    def _webhook_routes(self) -> list[BaseRoute]:
        import webhooks

        mounted = webhooks.build_routes(
            config=self.config,
            enqueue=self.enqueue,
            wake=self.wake,
            status_cache=self.status_cache,
            sha_index=self.sha_index,
            state_dir=Path(self.state_dir),
        )
        routes = getattr(mounted, "routes", mounted)
        if hasattr(mounted, "close"):
            self._closers.append(mounted)
        return list(routes)

    async def _index(self, request: Any) -> JSONResponse:
        return JSONResponse(
            {
                "name": "promoter",
                "strategies": "/api/v1/strategies",
                "metrics": "/metrics",
                "health": "/healthz",
            }
        )

    # --- what handlers and timers call -----------------------------------------------

    def strategies_of(self, repo_name: str) -> list[str]:
        return strategies_of(self.config, repo_name)

    def enqueue(self, keys: Iterable[str]) -> None:
        """Wake these strategies; their repositories are refreshed before they are read."""
        keys = list(keys)
        for key in keys:
            strategy = self.config.strategy(key)
            if strategy is not None:
                self.mirrors.invalidate(strategy.repository)
        self.queue.add_many(keys)

    def wake(self, keys: Iterable[str]) -> None:
        """Wake these strategies for a new status of a commit they track: no ref moved,
        so their mirrors are trusted for their freshness window."""
        self.queue.add_many(list(keys))

    def _forget_cached_reads(self) -> None:
        """A resync reads statuses and pull requests from the SCM again (conditional reads
        make that free where the SCM supports them), so a lost webhook heals within it."""
        self.status_cache.clear()
        self.pr_cache.clear()

    def unreachable(self) -> dict[str, str]:
        found = dict(self.scheduler.unreachable)
        for name, view in self.reconciler.views.items():
            if view.error and view.snapshot is None:
                strategy = self.config.strategy(name)
                if strategy is not None:
                    found.setdefault(strategy.repository, view.error)
        return found

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        if self.started:
            return
        self.workers.start()
        self.scheduler.every(LEDGER_FLUSH_INTERVAL, self.ledger.flush_all, "ledger-flush")
        self.scheduler.start()
        self.scheduler.resync()
        self.started = True
        log.info(
            "promoter started",
            extra={"url": self.public_url, "strategies": len(self.config.promotion_strategies)},
        )

    def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        self.scheduler.stop()
        finished = self.workers.stop(timeout=60)
        self.ledger.flush_all()
        for closer in self._closers:
            closer.close()
        for plugin in self.plugins.values():
            plugin.close()
        log.info("promoter stopped", extra={"clean": finished})

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(self.start)
        try:
            yield
        finally:
            await run_in_threadpool(self.stop)
