"""Kubernetes mode wired together: watches -> Config -> Runtime, led by a Lease or sharded.

One thread applies changes in order: a changed spec rebuilds the Config and swaps in a
new Runtime. With one leader, gaining the Lease starts the Runtime (workers, timers, a
full resync) and losing it stops the Runtime (the SCM plugins were fenced already, at
the renew deadline). Sharded (``KubeSettings.shards``), every replica runs its Runtime
on the repositories whose shard Leases it holds (``promoter.kube.sharding``); a shard
gained is read afresh at once. The leader still writes what belongs to no repository
(the Ready status of providers and invalid objects). Status is written by whoever works
on the object, and only when it changed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from promoter.config import Config, ScmProvider
from promoter.daemon import StrategyView
from promoter.errors import HoldLapsed, NotOwner
from promoter.kube.api import Kube
from promoter.kube.cluster_runtime import ClusterRuntime
from promoter.kube.cluster_scm import ClusterScm, Guard, leader_guard
from promoter.kube.commit_status_sync import CommitStatusSync
from promoter.kube.commit_statuses import CommitStatusIndex
from promoter.kube.config_source import (
    Assembled,
    ObjKey,
    SecretFiles,
    assemble,
    config_name,
    object_key,
    split_name,
)
from promoter.kube.events import EventRecorder
from promoter.kube.leader import LeaderElector, LeaseSettings
from promoter.kube.publisher import Publisher
from promoter.kube.refresh import RefreshForwarder
from promoter.kube.resources import REFRESH_ANNOTATION
from promoter.kube.sharding import Sharding
from promoter.kube.shards import ShardSettings
from promoter.kube.status import ready_status, strategy_status
from promoter.kube.status_writer import StatusWriter
from promoter.kube.token_review import TokenReviewer
from promoter.kube.watcher import Watcher
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
LEAVE_POLL = 0.02
"""Seconds between two looks at the shards still held while leaving."""

Obj = dict[str, Any]
KINDS = {
    "promotionstrategies": "PromotionStrategy",
    "gitrepositories": "GitRepository",
    "scmproviders": "ScmProvider",
    "commitstatuses": "CommitStatus",
}


@dataclass(frozen=True)
class KubeSettings:
    """Where to watch, who we are, and the Lease's timing."""

    namespace: str | None
    lease: LeaseSettings
    identity: str
    watch_timeout: int = 60
    plugin_factory: Callable[[ScmProvider, str], ScmPlugin] | None = field(default=None)
    shards: ShardSettings | None = None
    """Shard the repositories over the live replicas; None: one leader does all the work."""


def _generation(obj: Obj | None) -> Any:
    return (obj or {}).get("metadata", {}).get("generation")


def _refreshed(obj: Obj | None) -> Any:
    return ((obj or {}).get("metadata", {}).get("annotations") or {}).get(REFRESH_ANNOTATION)


class Controller:
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
            kube, self._strategy_object, instance=settings.identity, post=self.publisher.append
        )
        self.elector = LeaderElector(
            kube,
            settings.lease,
            settings.identity,
            on_started=self._signal,
            on_stopped=self._signal,
        )
        self.sharding: Sharding | None = None
        if settings.shards is not None:
            self.sharding = Sharding(
                kube,
                settings.lease,
                settings.shards,
                settings.identity,
                config=lambda: self.assembled.config,
                fallback=self.forwarder.forward,
                moved=self._signal,
                ready=lambda: self.runtime.started,
                prepare=self._warm_up,
            )
        self._led = False
        self.watchers = {
            plural: Watcher(
                kube,
                plural,
                settings.namespace,
                self._on_change(plural),
                timeout=settings.watch_timeout,
                on_synced=self._signal,
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
            mine=self._mine_repository,
            objects=self.watchers["commitstatuses"].snapshot,
            wake=self._signal,
        )
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._configured = threading.Event()
        """Set once the runtime's configuration was built from what was listed."""
        self._thread = threading.Thread(target=self._run, name="kube-controller", daemon=True)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        for watcher in self.watchers.values():
            watcher.start()
        self.forwarder.start()
        self.publisher.start()
        self._thread.start()
        self.elector.start()
        if self.sharding is not None:
            self.sharding.start()

    def leave(self) -> None:
        """Sharded, at SIGTERM and while the replica still answers (``kube.serving``):
        pass what webhooks and people queued to the next owners, hand every shard over,
        and wait until none is held (the renew deadline and two rounds at most). A write
        for one of them meanwhile is refused by the fence as moved and sent on to the
        next owner by the replica that passed it, rather than meeting a closed port.
        The runtime goes on; ``stop`` ends it."""
        sharding = self.sharding
        if sharding is None or self._stop.is_set():
            return
        lease = self.settings.lease
        started = time.monotonic()
        self._hand_over()
        coordinator = sharding.coordinator
        deadline = time.monotonic() + lease.renew_deadline + 2 * lease.retry_period
        while coordinator.held() and time.monotonic() < deadline:
            time.sleep(LEAVE_POLL)
        log.info(
            "left the shard group",
            extra={"held": len(coordinator.held()), "seconds": time.monotonic() - started},
        )

    def _hand_over(self) -> None:
        """Pass what webhooks and people queued to the next owners (annotated before any
        Lease is released: their take-over reads it first), then hand every shard over."""
        assert self.sharding is not None
        self.forwarder.forward(self.runtime.queue.urgent())
        self.forwarder.flush(timeout=self.settings.lease.renew_deadline)
        self.sharding.coordinator.hand_over_all()

    def stop(self, *, release: bool = True) -> None:
        """Stop everything; ``release=False`` leaves the Leases to expire (a crash, in tests).

        Sharded, the shards are handed over while the runtime stops: what webhooks and
        people queued is passed to the next owners first (annotated before any Lease is
        released: their take-over reads it first), then no new write is let through and
        each shard Lease is released as soon as the writes in flight for it end, not
        once the whole runtime has stopped (its port is closed meanwhile: a request
        for its repositories would find no owner to answer it)."""
        if self._stop.is_set():
            return
        if self.sharding is not None and not release:
            self.sharding.stop(release=False)  # as a kill: the Leases stop first
        if not release:
            self.publisher.stop(timeout=0, drop=True)
        self.elector.stop(release=release)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=90)
        if self.sharding is not None and release:
            self._hand_over()
        self.runtime.close()
        self.publisher.stop(timeout=self.settings.lease.renew_deadline)
        if self.sharding is not None and release:
            self.sharding.stop(release=True)  # what is left, and the member Lease
        for watcher in self.watchers.values():
            watcher.stop()
        self.forwarder.stop()

    def synced(self) -> bool:
        return all(w.synced.is_set() for w in self.watchers.values())

    def ready(self) -> bool:
        """Listed everything, and built the runtime's configuration from it: until then a
        request about any strategy or repository would be answered as if it did not
        exist (404), so the replica must not be sent any (``/readyz``). Sharded, it has
        also joined (warmed up, its first round of the shard Leases done): until then
        it knows no shard's holder, and would hold every request it cannot answer itself
        until its warm-up ends."""
        if not (self.synced() and self._configured.is_set()):
            return False
        return self.sharding is None or self.sharding.coordinator.rounds > 0

    def leading(self) -> bool:
        return self.elector.is_leader()

    def _works(self) -> bool:
        """Whether this replica's Runtime runs: sharded always, else while it leads."""
        return self.sharding is not None or self.leading()

    def _mine(self, key: str) -> bool:
        """Whether this replica works on strategy ``key`` now."""
        return self.sharding.mine(key) if self.sharding is not None else self.leading()

    def _mine_repository(self, repository: str | None) -> bool:
        """Whether this replica writes for ``repository`` (None: for no repository, which
        the leader does)."""
        if self.sharding is None or repository is None:
            return self.leading()
        return self.sharding.fence.claims(repository)

    def _signal(self) -> None:
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
        if self.sharding is not None:
            self._step_sharded(leading)
            return
        if leading and not self.runtime.started:
            self.writer.forget()
            self.commit_statuses.mark_all()
            self.runtime.start()
            self._write_ready_statuses()
        elif not leading and self.runtime.started:
            log.warning("stopping the reconcilers: not the leader")
            old, self.runtime = self.runtime, self._runtime(self.assembled.config)
            old.close()
        if leading:
            self.commit_statuses.mirror_pending()

    def _step_sharded(self, leading: bool) -> None:
        assert self.sharding is not None
        if not self.runtime.started:
            self.writer.forget()
            self.runtime.start()
            self._share_budgets()
        if leading and not self._led:
            self._write_ready_statuses()
        self._led = leading
        annotated = self.watchers["promotionstrategies"].objects
        if self.sharding.step(self.runtime, annotated=annotated, forward=self.forwarder.forward):
            self.commit_statuses.mark_all()
        self.commit_statuses.mirror_pending()

    def _warm_up(self, shards: set[str]) -> None:
        if self.sharding is not None:
            self.sharding.warm_up(self.runtime, shards)

    def _share_budgets(self) -> None:
        assert self.sharding is not None
        self.sharding.share_budgets(self.runtime.plugins)

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
            if self._works():
                self.runtime.start()
                if self.sharding is not None:
                    self._share_budgets()
        else:
            self.assembled = assembled  # the same configuration; its problems may differ
        if self.leading():
            self._write_ready_statuses()
        if self._works() and not changed:
            self.runtime.queue.add_many(k for k in self._unobserved() if self._mine(k))

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
        sharding = self.sharding
        guard: Guard = leader_guard(self.leading) if sharding is None else sharding.fence.writing
        plugins: dict[str, ScmPlugin] = {
            p.name: ClusterScm(factory(p, str(self.state_dir)), guard=guard, statuses=self.index)
            for p in config.scm_providers
        }
        if sharding is not None:
            runtime = sharding.runtime(
                config, plugins=plugins, observers=[self.events], reconciled=self._reconciled
            )
        else:
            runtime = ClusterRuntime(
                config,
                plugins=plugins,
                observers=[self.events],
                mine=self._mine,
                forward=lambda keys, wake: self.forwarder.forward(keys),
                reconciled=self._reconciled,
            )
        reviewer = TokenReviewer(self.kube, audiences=config.access.kubernetes.audiences)
        daemon = Daemon(config, runtime=runtime, review=reviewer)
        runtime.app, runtime.api = daemon.app, daemon.api
        return runtime

    # --- watch events --------------------------------------------------------------------

    def _on_change(self, plural: str) -> Callable[[str, Obj, Obj | None], None]:
        def changed(kind: str, obj: Obj, before: Obj | None) -> None:
            if plural == "commitstatuses":
                self.commit_statuses.changed(kind, obj)
                return
            spec_changed = kind != "MODIFIED" or _generation(obj) != _generation(before)
            if spec_changed:
                self._config_dirty = True
                self._rebuild_after = 0.0  # a change may mend what failed to build
                self._wake.set()
            elif plural == "promotionstrategies" and _refreshed(obj) != _refreshed(before):
                meta = obj["metadata"]
                key = config_name(meta["namespace"], meta["name"])
                if self._mine(key) and self.runtime.config.strategy(key) is not None:
                    self.runtime.enqueue([key])

        return changed

    # --- writes (by whoever works on the object) -----------------------------------------

    def _strategy_object(self, key: str) -> Obj | None:
        return self.watchers["promotionstrategies"].cache.get(split_name(key))

    def _reconciled(self, key: str, view: StrategyView | None) -> None:
        """A reconcile of ``key`` ended: its status is written on the publisher's thread,
        from the last view there is when its turn comes."""
        if view is not None:
            self.publisher.latest(key, lambda: self._write_status(key))

    def _write_status(self, key: str) -> None:
        obj = self._strategy_object(key)
        view = self.runtime.reconciler.views.get(key)
        if obj is None or view is None:
            return
        status = strategy_status(obj, view, None)
        if self.sharding is None:
            if self.leading():
                self.writer.write("promotionstrategies", obj, status)
            return
        strategy = self.runtime.config.strategy(key)
        if strategy is None:
            return
        try:
            with self.sharding.fence.writing(strategy.repository):
                self.writer.write("promotionstrategies", obj, status)
        except (NotOwner, HoldLapsed):
            return

    def _write_ready_statuses(self) -> None:
        problems = self.assembled.problems
        for plural, kind in KINDS.items():
            if plural == "commitstatuses":
                continue
            for obj in self.watchers[plural].objects():
                if not self.leading():
                    return
                meta = obj["metadata"]
                problem = problems.get((kind, meta["namespace"], meta["name"]))
                if plural == "promotionstrategies":
                    if problem is not None:
                        self.writer.write(plural, obj, strategy_status(obj, None, problem))
                else:
                    self.writer.write(plural, obj, ready_status(obj, problem))
