"""One replica's part in a sharded installation, as the controller uses it.

It ties the shard Leases (``ShardCoordinator``), the write fence (``ShardFence``) and
the forwarding of work to owners (``PeerForwarder``) to the current configuration:
which shard each repository is in, what each shard weighs (its strategies), who owns a
strategy, and this replica's share of each SCM credential's rate budget.

Budgets: every replica keeps its own limiter per credential (``scm_plugins.budget``);
each gets the share of the credential's limits that its held shards weigh among all
the shards using that credential, re-split whenever shards move. Held shards are
disjoint, so the shares never add up to more than the whole (plus ``MIN_SHARE`` for a
replica holding none, which only answers API writes; a credential no strategy uses is
split evenly).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from promoter.config import Config
from promoter.daemon import Observer, StrategyView
from promoter.kube.client.api import Kube, Obj
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.resources.config_source import config_name
from promoter.kube.resources.refresh import recently_refreshed
from promoter.kube.resources.status import quiet
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.runtime.scm import ClusterScm
from promoter.kube.shards.assignment import shard_name, shard_of
from promoter.kube.shards.coordinator import ShardCoordinator, ShardSettings, Work
from promoter.kube.shards.fence import ShardFence
from promoter.kube.shards.peers import PeerForwarder
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.kube.sharding")

BACKGROUND_NICE = 10
"""How much lower the warm-up's threads, and the git processes they start, run. A
replica that joins in a rolling update shares its node's cores with the replicas that
serve meanwhile, and nothing but its own joining waits for its warm-up."""


def background_priority() -> None:
    """Lower the calling thread's CPU priority by ``BACKGROUND_NICE``: on Linux the nice
    value is a thread's, and the processes it starts inherit it; the process's other
    threads keep theirs. Nothing where the system refuses or knows no such thing."""
    try:
        thread = threading.get_native_id()
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, nice + BACKGROUND_NICE))
    except (OSError, AttributeError):
        log.debug("warm-up priority unchanged", exc_info=True)


MIN_SHARE = 0.01
TAKE_OVER_SPREAD = 0.005
"""Seconds between two reads of a shard just taken over (1,000 strategies: 5 s)."""
AT_REST_SPREAD = 60.0
"""The strategies at rest of a shard just taken over are read over this long (at most
the resync interval)."""


@dataclass
class _Index:
    config: Config
    work: Work
    repository_of: dict[str, str]
    """Strategy -> its repository."""


class Sharding:
    def __init__(
        self,
        kube: Kube,
        lease: LeaseSettings,
        settings: ShardSettings,
        identity: str,
        *,
        config: Callable[[], Config],
        fallback: Callable[[list[str]], None],
        moved: Callable[[], None],
        ready: Callable[[], bool] = lambda: True,
        prepare: Callable[[set[str]], None] = lambda shards: None,
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.lease_duration = lease.lease_duration
        self._config = config
        self._moved = moved
        self._index: _Index | None = None
        self._lock = threading.Lock()
        self._gained: set[str] = set()
        self._lost: set[str] = set()
        self._revoked: set[str] = set()
        self._regained: set[str] = set()
        self._changed = False
        self.fence = ShardFence(shard_of=self.shard_of, renew_deadline=lease.renew_deadline)
        self.coordinator = ShardCoordinator(
            kube,
            lease,
            settings,
            identity,
            work=lambda: self.index().work,
            fence=self.fence,
            on_change=self._on_change,
            on_revoke=self._on_revoke,
            ready=ready,
            prepare=prepare,
        )
        self.peers = PeerForwarder(
            identity=identity, token=settings.peer_token, locate=self.locate, fallback=fallback
        )

    def start(self) -> None:
        self.peers.start()
        self.coordinator.start()

    def stop(self, *, release: bool = True) -> None:
        self.coordinator.stop(release=release)
        self.peers.stop()

    # --- the configuration, indexed ------------------------------------------------------

    def shard_of(self, repository: str) -> str:
        return shard_name(shard_of(repository, self.settings.count))

    def index(self) -> _Index:
        config = self._config()
        index = self._index
        if index is not None and index.config is config:
            return index
        weights: dict[str, float] = {}
        repositories: dict[str, list[str]] = {}
        for repo in config.repositories:
            repositories.setdefault(self.shard_of(repo.name), []).append(repo.name)
        repository_of = {}
        for strategy in config.promotion_strategies:
            repository_of[strategy.name] = strategy.repository
            shard = self.shard_of(strategy.repository)
            weights[shard] = weights.get(shard, 0.0) + 1.0
        index = _Index(config, Work(weights, repositories), repository_of)
        self._index = index
        return index

    # --- who works on what ---------------------------------------------------------------

    def mine(self, key: str) -> bool:
        """Whether strategy ``key`` is this replica's to work on now (its writes wait
        while the hold has lapsed)."""
        repo = self.index().repository_of.get(key)
        return repo is not None and self.fence.claims(repo)

    def locate(self, key: str) -> tuple[str, str] | None:
        repo = self.index().repository_of.get(key)
        if repo is None:
            return None
        return self.coordinator.holder_of(self.shard_of(repo))

    def owner(self, key: str) -> str | None:
        found = self.locate(key)
        return found[0] if found else None

    def locate_repository(self, repository: str) -> tuple[str, str] | None:
        return self.coordinator.holder_of(self.shard_of(repository))

    # --- shards that moved ----------------------------------------------------------------

    def _on_change(self, gained: set[str], lost: set[str], regained: set[str]) -> None:
        with self._lock:
            self._gained |= gained
            self._gained -= lost
            self._lost |= lost
            self._lost -= gained
            self._regained |= regained
            self._changed = True
        self._moved()

    def _on_revoke(self, shard: str) -> None:
        with self._lock:
            self._revoked.add(shard)
        self._moved()

    def take_moved(self) -> tuple[set[str], set[str], set[str], bool]:
        """Repositories of the shards gained, of those regained and of those lost since
        the last call, and whether any moved."""
        with self._lock:
            gained, regained, changed = self._gained, self._regained, self._changed
            lost, self._lost = self._lost, set()
            self._gained, self._regained, self._changed = set(), set(), False
        work = self.index().work

        def repositories(shards: set[str]) -> set[str]:
            return {repo for shard in shards for repo in work.repositories.get(shard, [])}

        return repositories(gained), repositories(regained - gained), repositories(lost), changed

    def take_handed_over(self, keys: list[str]) -> list[str]:
        """Of ``keys`` (queued here by webhooks and people), those of the shards being
        handed over since the last call: their next owner should run them first."""
        with self._lock:
            revoked, self._revoked = self._revoked, set()
        if not revoked:
            return []
        repository_of = self.index().repository_of
        return [
            key
            for key in keys
            if key in repository_of and self.shard_of(repository_of[key]) in revoked
        ]

    def budget_shares(self) -> dict[str, float]:
        """Provider -> the share of its credential's limits this replica may spend."""
        index = self.index()
        held = self.coordinator.held()
        provider_of = {r.name: r.scm_provider for r in index.config.repositories}
        total: dict[str, float] = {}
        ours: dict[str, float] = {}
        for repo in index.repository_of.values():
            provider = provider_of.get(repo)
            if provider is None:
                continue
            total[provider] = total.get(provider, 0.0) + 1.0
            if self.shard_of(repo) in held:
                ours[provider] = ours.get(provider, 0.0) + 1.0
        even = 1.0 / max(1, len(self.coordinator.table.members))
        return {
            p.name: max(MIN_SHARE, ours.get(p.name, 0.0) / total[p.name])
            if total.get(p.name)
            else even
            for p in index.config.scm_providers
        }

    # --- acting on the replica's runtime -----------------------------------------------

    def runtime(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer],
        reconciled: Callable[[str, StrategyView | None], None],
    ) -> ClusterRuntime:
        """A Runtime that works on the held shards' repositories and forwards the rest;
        its git pushes run inside the fence."""
        return ClusterRuntime(
            config,
            plugins=plugins,
            observers=observers,
            mine=self.mine,
            forward=lambda keys, wake: self.peers.forward(keys, wake=wake),
            reconciled=reconciled,
            owns=self.fence.claims,
            push_guard=self.fence.writing,
            owner=self.owner,
            handing_over=True,
        )

    def take_over(
        self,
        runtime: ClusterRuntime,
        repositories: set[str],
        *,
        urgent: set[str],
        at_rest: set[str],
    ) -> None:
        """Shards just gained: forget what was cached about their repositories (another
        replica worked on them meanwhile) and read every strategy of them afresh: the
        ``urgent`` ones (a webhook named them lately) at once, the others spread over
        ``TAKE_OVER_SPREAD`` each, and those ``at_rest`` (their status says every
        environment is up to date) over ``AT_REST_SPREAD``: the work webhooks bring
        meanwhile never waits behind a whole shard's reads, nor shares the CPU with
        all of them at once. Their mirrors are refreshed ahead of those reads, the
        repositories of the urgent ones first (``MirrorPool.refresh_ahead``): one this
        replica never held is cloned there, not by a reconcile other workers wait for."""
        runtime.pr_cache.forget_repositories(repositories)
        runtime.status_cache.forget_repositories(repositories)
        for repo in repositories:
            runtime.mirrors.invalidate(repo)
        strategies = [
            s for s in runtime.config.promotion_strategies if s.repository in repositories
        ]
        keys = [s.name for s in strategies]
        first = [k for k in keys if k in urgent]
        named = {s.repository for s in strategies if s.name in urgent}
        known = {r.name: r for r in runtime.config.repositories if r.name in repositories}
        ahead = sorted(known, key=lambda name: (name not in named, name))
        runtime.mirrors.refresh_ahead([known[name] for name in ahead])
        active = [k for k in keys if k not in urgent and k not in at_rest]
        resting = [k for k in keys if k not in urgent and k in at_rest]
        for key in active + resting:
            runtime.settled.unsettle(key)
        counts = {"strategies": len(keys), "urgent": len(first), "at_rest": len(resting)}
        log.info("taking over", extra={"repositories": len(repositories), **counts})
        runtime.enqueue(first)
        runtime.queue.add_spread(active, TAKE_OVER_SPREAD * len(active))
        over = max(AT_REST_SPREAD, TAKE_OVER_SPREAD * len(resting))
        runtime.queue.add_spread(resting, min(over, runtime.config.daemon.resync_interval))

    def step(
        self,
        runtime: ClusterRuntime,
        *,
        annotated: Callable[[], list[Obj]],
        forward: Callable[[list[str]], None],
    ) -> bool:
        """On the controller's thread, after shards moved: hand the work webhooks and
        people queued for the shards being handed over to their next owner (``forward``:
        the annotation; the rest is read anyway by the next owner's take-over), let go
        of what was kept about the lost ones (``ClusterRuntime.let_go``), take the gained
        ones over (given the strategy objects: those ``annotated`` lately first, those at
        rest last), re-split the budgets. True when shards were gained."""
        handed = self.take_handed_over(runtime.queue.urgent())
        if handed:
            forward(handed)
        gained, regained, lost, moved = self.take_moved()
        if lost:
            let_go = runtime.let_go(lost)
            log.info(
                "let go of the repositories of shards moved away",
                extra={"repositories": len(let_go)},
            )
        if regained:  # nobody else held them: only what webhooks named meanwhile
            recent = recently_refreshed(annotated(), within=3 * self.lease_duration)
            runtime.enqueue(
                [
                    s.name
                    for s in runtime.config.promotion_strategies
                    if s.repository in regained and s.name in recent
                ]
            )
        if gained:
            objects = annotated()
            urgent = recently_refreshed(objects, within=3 * self.lease_duration)
            at_rest = {
                config_name(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in objects
                if quiet(o)
            }
            self.take_over(runtime, gained, urgent=urgent, at_rest=at_rest)
        if moved:
            self.share_budgets(runtime.plugins)
        return bool(gained)

    def warm_up(self, runtime: ClusterRuntime, shards: set[str]) -> None:
        """Clone or fetch the repositories of ``shards`` (four at a time, at a lower CPU
        priority: ``background_priority``), before this replica joins and is given them."""
        work = self.index().work
        repos = sorted({r for shard in shards for r in work.repositories.get(shard, [])})

        def fetch(name: str) -> None:
            try:
                runtime.mirrors.fresh(runtime.config.repository(name))
            except Exception as exc:  # the reconciles will say why
                log.info("not warmed up", extra={"repository": name, "error": str(exc)})

        with ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="warm-up", initializer=background_priority
        ) as pool:
            list(pool.map(fetch, repos))
        log.info("warmed up", extra={"shards": len(shards), "repositories": len(repos)})

    def share_budgets(self, plugins: Mapping[str, ScmPlugin]) -> None:
        """Give each credential's limiter this replica's share of its limits."""
        for name, share in self.budget_shares().items():
            plugin = plugins.get(name)
            if isinstance(plugin, ClusterScm):
                plugin.set_budget_share(share)
