"""Kubernetes mode wired together: watches -> Config -> Runtime, in one of two modes.

One thread applies changes in order: a changed spec rebuilds the Config and swaps in a
new Runtime. Which work is this replica's is its mode's to say (``Mode``, chosen once
from the settings): with one leader (``LeaderMode``), all of it while it holds the
Lease; sharded (``KubeSettings.shards``, ``ShardedMode``), that of the repositories
whose shard Leases it holds. The controller asks the mode, never which mode it is.
The leader writes what belongs to no repository (the Ready status of providers and
invalid objects). Status is written by whoever works on the object, and only when it
changed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from promoter.config import Config
from promoter.daemon import StrategyView
from promoter.kube.client.api import Kube, Obj
from promoter.kube.client.token_review import TokenReviewer
from promoter.kube.client.watcher import Watcher
from promoter.kube.controller.settings import KINDS, KubeSettings, generation_of, refresh_of
from promoter.kube.leadership.elector import LeaderElector
from promoter.kube.leadership.mode import LeaderMode
from promoter.kube.resources.commit_status_sync import CommitStatusSync
from promoter.kube.resources.commit_statuses import CommitStatusIndex
from promoter.kube.resources.config_source import (
    Assembled,
    ObjKey,
    SecretFiles,
    assemble,
    config_name,
    object_key,
    split_name,
)
from promoter.kube.resources.events import EventRecorder
from promoter.kube.resources.publisher import Publisher
from promoter.kube.resources.refresh import RefreshForwarder
from promoter.kube.resources.status import strategy_status
from promoter.kube.resources.status_writer import StatusWriter, write_ready_statuses
from promoter.kube.runtime.mode import Mode
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.runtime.scm import ClusterScm
from promoter.kube.shards.mode import ShardedMode
from promoter.metrics import forget_strategies
from promoter.wiring import Daemon
from scm_plugins.protocol import ScmPlugin
from scm_plugins.registry import build_plugin

log = logging.getLogger("promoter.kube.controller")

TICK = 1.0
"""Seconds between two steps of the controller's thread when nothing wakes it: what
changes (a watch event, a list read to its end, the election, a shard moved) wakes it at
once; the tick is a safety net."""

REBUILD_RETRY = (1.0, 60.0)
"""Seconds before building a configuration that failed to build again: the first wait,
doubled on each failure up to the second (a change of the objects tries again at once)."""


class Controller:
    """Watches -> ``Config`` -> runtime, on one thread, in the mode the settings choose."""

    def __init__(self, kube: Kube, base: Config, settings: KubeSettings) -> None:
        self.kube = kube
        self.base = base
        self.settings = settings
        self.state_dir = base.state_path()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.secrets = SecretFiles(self.state_dir / "secrets", kube.secret_data)
        self.index = CommitStatusIndex()
        self.writer = StatusWriter(kube)
        self.forwarder = RefreshForwarder(kube)
        self.publisher = Publisher()
        """Writes statuses and Events off the reconciles (a slow API server holds none)."""
        self.events = EventRecorder(
            kube,
            self._strategy_object,
            instance=settings.identity,
            post=self.publisher.append,
            fenced=self._write_for,
        )
        self.elector = LeaderElector(
            kube,
            settings.lease,
            settings.identity,
            on_started=self.signal,
            on_stopped=self.signal,
        )
        self.sharding: ShardedMode | None = None
        """The sharded mode, for the tests that look inside a replica; None with one
        leader. The controller itself only asks ``mode``."""
        self.mode: Mode = self._mode(kube)
        self.watchers = {
            plural: Watcher(
                kube,
                plural,
                settings.namespace,
                self._on_change(plural),
                timeout=settings.watch_timeout,
                on_synced=self.signal,
            )
            for plural in KINDS
        }
        self.assembled = Assembled(base)
        self.runtime = self._runtime(base)
        self._config_dirty = True
        self._rebuild_failures = 0
        self._rebuild_after = 0.0
        """Not before this (``time.monotonic``) after a failed build, unless objects change."""
        self.commit_statuses = CommitStatusSync(
            index=self.index,
            writer=self.writer,
            runtime=lambda: self.runtime,
            mine=self.mode.writes_for,
            objects=self.watchers["commitstatuses"].snapshot,
            wake=self.signal,
        )
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._configured = threading.Event()
        """Set once the runtime's configuration was built from what was listed."""
        self._thread = threading.Thread(target=self._run, name="kube-controller", daemon=True)

    # --- lifecycle ---------------------------------------------------------------------

    def _mode(self, kube: Kube) -> Mode:
        """The one place the mode is chosen: shards when the settings name them."""
        settings = self.settings
        if settings.shards is None:
            return LeaderMode(replica=self, leading=self.leading)
        self.sharding = ShardedMode(
            kube,
            settings.lease,
            settings.shards,
            settings.identity,
            replica=self,
            leading=self.leading,
        )
        return self.sharding

    def start(self) -> None:
        for watcher in self.watchers.values():
            watcher.start()
        self.forwarder.start()
        self.publisher.start()
        self._thread.start()
        self.elector.start()
        self.mode.start()

    def leave(self) -> None:
        """At SIGTERM, while the replica still answers (``kube.serving``): the mode hands
        the work over (sharded: every shard, after what webhooks and people queued). The
        runtime goes on; ``stop`` ends it."""
        if self._stop.is_set():
            return
        self.mode.leave()

    def stop(self, *, release: bool = True) -> None:
        """Stop everything; ``release=False`` leaves the Leases to expire (a crash, in tests).

        The work is handed over while the runtime stops (``Mode.hand_over``; sharded,
        what webhooks and people queued is passed to the next owners first, then no new
        write is let through and each shard Lease is released as soon as the writes in
        flight for it end, not once the whole runtime has stopped: its port is closed
        meanwhile, and a request for its repositories would find no owner to answer it)."""
        if self._stop.is_set():
            return
        if not release:
            self.mode.stop(release=False)  # as a kill: the Leases stop first
            self.publisher.stop(timeout=0, drop=True)
        self.elector.stop(release=release)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=90)
        if release:
            self.mode.hand_over()
        self.runtime.close()
        self.publisher.stop(timeout=self.settings.lease.renew_deadline)
        if release:
            self.mode.stop(release=True)  # what is left, and the member Lease
        for watcher in self.watchers.values():
            watcher.stop()
        self.forwarder.stop()

    def synced(self) -> bool:
        return all(w.synced.is_set() for w in self.watchers.values())

    def ready(self) -> bool:
        """Listed everything, and built the runtime's configuration from it: until then a
        request about any strategy or repository would be answered as if it did not
        exist (404), so the replica must not be sent any (``/readyz``). And the mode has
        joined (sharded: warmed up, its first round of the shard Leases done)."""
        return self.synced() and self._configured.is_set() and self.mode.joined()

    def leading(self) -> bool:
        return self.elector.is_leader()

    def signal(self) -> None:
        self._wake.set()

    # --- the one thread that applies changes ---------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=TICK)
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                self._step()
            except Exception:
                log.exception("controller step failed")

    def _step(self) -> None:
        if not self.synced():
            return
        leading = self.leading()
        if self._config_dirty:
            now = time.monotonic()
            if now < self._rebuild_after:
                return  # not ready meanwhile
            self._config_dirty = False
            try:
                self._rebuild()
            except Exception:
                self._config_dirty = True
                self._rebuild_failures += 1
                first, longest = REBUILD_RETRY
                wait = min(first * 2 ** (self._rebuild_failures - 1), longest)
                self._rebuild_after = now + wait
                log.error(
                    "configuration not built; tried again later",
                    extra={"failures": self._rebuild_failures, "retry_in_s": wait},
                    exc_info=True,
                )
                return
            self._rebuild_failures = 0
        self._configured.set()
        self.mode.step(leading=leading)

    def _rebuild(self) -> None:
        objects: dict[ObjKey, Obj] = {}
        for plural in ("promotionstrategies", "gitrepositories", "scmproviders"):
            for obj in self.watchers[plural].objects():
                obj = {**obj, "kind": KINDS[plural]}
                objects[object_key(obj)] = obj
        assembled = assemble(self.base, objects, self.secrets)
        for key, problem in assembled.problems.items():
            log.warning(
                "invalid object left out",
                extra={"object": f"{key[0]}/{key[1]}/{key[2]}", "error": problem},
            )
        changed = assembled.config != self.assembled.config
        before = self.assembled
        if changed:
            log.info(
                "configuration changed",
                extra={"strategies": len(assembled.config.promotion_strategies)},
            )
            runtime = self._runtime(assembled.config)  # if this fails, nothing was swapped
            old, self.runtime, self.assembled = self.runtime, runtime, assembled
            forget_strategies(  # deleted ones: their metric series go with them
                {s.name for s in before.config.promotion_strategies}
                - {s.name for s in assembled.config.promotion_strategies}
            )
            old.close()
            # before the start, which may raise: the next step starts the workers, but
            # nothing else would look at these objects again before their retry
            self.commit_statuses.config_changed(before.config, assembled.config)
            self.mode.run(self.runtime)
        else:
            self.assembled = assembled  # the same configuration; its problems may differ
        if self.leading():
            self.write_ready_statuses()
        if self.mode.works() and not changed:
            self.runtime.queue.add_many(k for k in self._unobserved() if self.mode.mine(k))

    def _unobserved(self) -> list[str]:
        """Valid strategies whose status is behind their spec (an edit that left the Config
        as it was, e.g. a field set to its default): reconcile them to say so."""
        keys = []
        for obj in self.watchers["promotionstrategies"].objects():
            meta = obj["metadata"]
            key = config_name(meta["namespace"], meta["name"])
            observed = (obj.get("status") or {}).get("observedGeneration")
            if observed != meta.get("generation") and self.runtime.config.strategy(key):
                keys.append(key)
        return keys

    def _runtime(self, config: Config) -> ClusterRuntime:
        factory = self.settings.plugin_factory or (
            lambda provider, state: build_plugin(provider, state_dir=state)
        )
        guard = self.mode.writing
        plugins: dict[str, ScmPlugin] = {
            p.name: ClusterScm(
                factory(p, str(self.state_dir)),
                guard=guard,
                statuses=self.index,
                uncertain=lambda repository: self.runtime.reread(repository),
            )
            for p in config.scm_providers
        }
        runtime = self.mode.runtime(
            config, plugins=plugins, observers=[self.events], reconciled=self._reconciled
        )
        reviewer = TokenReviewer(self.kube, audiences=config.access.kubernetes.audiences)
        daemon = Daemon(config, runtime=runtime, review=reviewer)
        runtime.app, runtime.api = daemon.app, daemon.api
        return runtime

    def idle(self) -> None:
        """Swap the runtime for one of the same configuration that does not run."""
        old, self.runtime = self.runtime, self._runtime(self.assembled.config)
        old.close()

    # --- watch events --------------------------------------------------------------------

    def _on_change(self, plural: str) -> Callable[[str, Obj, Obj | None], None]:
        def changed(kind: str, obj: Obj, before: Obj | None) -> None:
            if plural == "commitstatuses":
                self.commit_statuses.changed(kind, obj)
                return
            spec_changed = kind != "MODIFIED" or generation_of(obj) != generation_of(before)
            if spec_changed:
                self._config_dirty = True
                self._rebuild_after = 0.0  # a change may mend what failed to build
                self._wake.set()
            elif plural == "promotionstrategies" and refresh_of(obj) != refresh_of(before):
                meta = obj["metadata"]
                key = config_name(meta["namespace"], meta["name"])
                if self.mode.mine(key) and self.runtime.config.strategy(key) is not None:
                    self.runtime.enqueue([key])

        return changed

    # --- writes (by whoever works on the object) -----------------------------------------

    def strategy_objects(self) -> list[Obj]:
        return self.watchers["promotionstrategies"].objects()

    def _strategy_object(self, key: str) -> Obj | None:
        return self.watchers["promotionstrategies"].cache.get(split_name(key))

    def _reconciled(self, key: str, view: StrategyView | None) -> None:
        """A reconcile of ``key`` ended: its status is written on the publisher's thread,
        from the last view there is when its turn comes."""
        if view is not None:
            self.publisher.latest(key, lambda: self._write_status(key))

    def _write_for(self, key: str, write: Callable[[], None]) -> None:
        """Make ``write`` (an Event about strategy ``key``) as a status is made: only while
        this replica writes for the strategy's repository (sharded: inside its fence)."""
        strategy = self.runtime.config.strategy(key)
        self.mode.write_status(strategy.repository if strategy is not None else None, write)

    def _write_status(self, key: str) -> None:
        obj = self._strategy_object(key)
        view = self.runtime.reconciler.views.get(key)
        if obj is None or view is None:
            return
        status = strategy_status(obj, view, None)
        strategy = self.runtime.config.strategy(key)
        self.mode.write_status(
            strategy.repository if strategy is not None else None,
            lambda: self.writer.write("promotionstrategies", obj, status),
        )

    def write_ready_statuses(self) -> None:
        write_ready_statuses(
            self.writer,
            lambda plural: self.watchers[plural].objects(),
            self.assembled.problems,
            leading=self.leading,
        )
