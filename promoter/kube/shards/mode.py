"""The sharded mode: each replica works on the repositories whose shard Leases it holds.

It ties the shard Leases (``ShardCoordinator``), the write fence (``ShardFence``) and
the forwarding of work to owners (``PeerForwarder``) to the configuration of the moment
(``Placement``): which shard each repository is in, who owns a strategy, this replica's
share of each SCM credential's rate budget. As shards come and go it takes the gained
ones over and lets go of the lost ones (``transfer``), on the controller's thread; at
SIGTERM it hands every shard over while the replica still answers (``leave``). The
leader (whoever holds the leader Lease) still writes what belongs to no repository.

Threads: the Lease loop reports what moved into ``Moves`` (locked) and the controller's
thread takes it from there; the coordinator, the fence and the peers are thread-safe
each on its own; the rest is read-only or the controller thread's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from promoter.config import Config
from promoter.daemon import Observer
from promoter.errors import HoldLapsed, NotOwner
from promoter.kube.client.api import Kube
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.resources.config_source import config_name
from promoter.kube.resources.refresh import recently_refreshed
from promoter.kube.resources.status import quiet
from promoter.kube.runtime.mode import Reconciled, Replica, Routes
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.shards import transfer
from promoter.kube.shards.assignment import Table
from promoter.kube.shards.coordinator import ShardCoordinator
from promoter.kube.shards.fence import ShardFence
from promoter.kube.shards.forwarding.peers import PeerForwarder
from promoter.kube.shards.moves import Moves
from promoter.kube.shards.placement import Placement
from promoter.kube.shards.routes import ShardRoutes
from promoter.kube.shards.settings import ShardSettings
from promoter.kube.shards.spending import LeaseFleet
from promoter.kube.shards.standby import StandbyMirrors
from promoter.kube.shards.transfer import RuntimePort
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.kube.sharding")

LEAVE_POLL = 0.02
"""Seconds between two looks at the shards still held while leaving."""


class ShardedMode:
    """A ``promoter.kube.runtime.mode.Mode``: the work of the shards this replica holds."""

    def __init__(
        self,
        kube: Kube,
        lease: LeaseSettings,
        settings: ShardSettings,
        identity: str,
        *,
        replica: Replica,
        leading: Callable[[], bool],
    ) -> None:
        self.settings = settings
        self.identity = identity
        self.lease = lease
        self.kube = kube
        self._fleets: dict[str, LeaseFleet] = {}
        self.replica = replica
        self.leading = leading
        self._led = False
        self.placement = Placement(settings.count, config=lambda: replica.assembled.config)
        self.moves = Moves(moved=replica.signal)
        self.standby = StandbyMirrors(lambda name: replica.runtime.fetch(name))
        self.fence = ShardFence(shard_of=self.shard_of, renew_deadline=lease.renew_deadline)
        self.coordinator = ShardCoordinator(
            kube,
            lease,
            settings,
            identity,
            work=self.placement.work,
            fence=self.fence,
            on_change=self.moves.changed,
            on_revoke=self.moves.revoked,
            ready=lambda: replica.runtime.started,
            prepare=lambda shards: self.warm_up(replica.runtime, shards),
            standby=self.look_ahead,
        )
        self.peers = PeerForwarder(
            identity=identity,
            token=settings.peer_token,
            locate=self.locate,
            fallback=replica.forwarder.forward,
        )

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.peers.start()
        self.coordinator.start()

    def joined(self) -> bool:
        """Warmed up, its first round of the shard Leases done: until then it knows no
        shard's holder, and would hold every request it cannot answer itself."""
        return self.coordinator.rounds > 0

    def leave(self) -> None:
        """At SIGTERM, while the replica still answers (``kube.serving``): pass what
        webhooks and people queued to the next owners, hand every shard over, and wait
        until none is held (the renew deadline and two rounds at most). A write for one
        of them meanwhile is refused by the fence as moved and sent on to the next owner
        by the replica that passed it, rather than meeting a closed port. The runtime
        goes on; the controller's ``stop`` ends it."""
        log.info("SIGTERM: leaving the shard group before shutting down")
        started = time.monotonic()
        self.hand_over()
        deadline = time.monotonic() + self.lease.renew_deadline + 2 * self.lease.retry_period
        while self.coordinator.held() and time.monotonic() < deadline:
            time.sleep(LEAVE_POLL)
        log.info(
            "left the shard group",
            extra={"held": len(self.coordinator.held()), "seconds": time.monotonic() - started},
        )

    def hand_over(self) -> None:
        """Pass what webhooks and people queued to the next owners (annotated before any
        Lease is released: their take-over reads it first), then hand every shard over:
        no new write is let through, and each shard Lease is released as soon as the
        writes in flight for it end."""
        forwarder = self.replica.forwarder
        forwarder.forward(self.replica.runtime.urgent())
        forwarder.flush(timeout=self.lease.renew_deadline)
        self.coordinator.hand_over_all()

    def stop(self, *, release: bool) -> None:
        """Stop the Lease loop (with ``release``: releasing what is left, and the member
        Lease) and the peers."""
        self.standby.stop()
        self.coordinator.stop(release=release)
        self.peers.stop()

    # --- who works on what ---------------------------------------------------------------

    def works(self) -> bool:
        return True

    def shard_of(self, repository: str) -> str:
        return self.placement.shard_of(repository)

    def mine(self, key: str) -> bool:
        """Whether strategy ``key`` is this replica's to work on now (its writes wait
        while the hold has lapsed)."""
        repo = self.placement.repository_of(key)
        return repo is not None and self.fence.claims(repo)

    def writes_for(self, repository: str | None) -> bool:
        if repository is None:
            return self.leading()
        return self.fence.claims(repository)

    def owns(self, repository: str) -> bool:
        """Whether a write on ``repository`` may start here now."""
        return self.fence.owns(repository)

    def writing(self, repository: str) -> AbstractContextManager[None]:
        return self.fence.writing(repository)

    def write_status(self, repository: str | None, write: Callable[[], object]) -> None:
        if repository is None:
            return
        try:
            with self.fence.writing(repository):
                write()
        except (NotOwner, HoldLapsed):
            return

    def locate(self, key: str) -> tuple[str, str] | None:
        """The replica working on strategy ``key`` and its address, as last seen."""
        repo = self.placement.repository_of(key)
        if repo is None:
            return None
        return self.coordinator.holder_of(self.shard_of(repo))

    def owner(self, key: str) -> str | None:
        found = self.locate(key)
        return found[0] if found else None

    def locate_repository(self, repository: str) -> tuple[str, str] | None:
        return self.coordinator.holder_of(self.shard_of(repository))

    def annotate(self, keys: list[str]) -> None:
        """Hand ``keys`` to their owners the slow way: their objects annotated."""
        self.replica.forwarder.forward(keys)

    def table(self) -> Table:
        """What the last round of the shard Leases saw and decided."""
        return self.coordinator.table

    def budget_shares(self) -> dict[str, float]:
        """Provider -> the share of its credential's limits this replica may spend."""
        held = self.coordinator.held()
        return self.placement.budget_shares(held, len(self.coordinator.table.members))

    # --- the runtime -------------------------------------------------------------------------

    def runtime(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer],
        reconciled: Reconciled,
    ) -> ClusterRuntime:
        """A runtime that works on the held shards' repositories and forwards the rest;
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

    def run(self, runtime: ClusterRuntime) -> None:
        runtime.start()
        self.share_budgets(runtime)

    def step(self, *, leading: bool) -> None:
        """The runtime always runs; the Ready statuses are written by a new leader; what
        moved is taken over or let go of, every CommitStatus object checked again when
        shards were gained."""
        replica = self.replica
        if not replica.runtime.started:
            replica.writer.forget()
            replica.runtime.start()
            self.share_budgets(replica.runtime)
        if leading and not self._led:
            replica.write_ready_statuses()
        self._led = leading
        if self.follow(replica.runtime):
            replica.commit_statuses.mark_all()
        replica.commit_statuses.mirror_pending()

    def follow(self, runtime: RuntimePort) -> bool:
        """After shards moved: hand the work webhooks and people queued for the shards
        being handed over to their next owner (the annotation; the rest is read anyway
        by the next owner's take-over), let go of the lost ones, take the gained ones
        over (the strategies annotated lately first, those at rest last), re-split the
        budgets. True when shards were gained."""
        queued = runtime.urgent()
        revoked = self.moves.take_revoked()
        handed = self.placement.of_shards(queued, revoked) if revoked else []
        if handed:
            self.replica.forwarder.forward(handed)
        moved = self.moves.take()
        gained = self.placement.repositories(moved.gained)
        regained = self.placement.repositories(moved.regained)
        lost = self.placement.repositories(moved.lost)
        if lost:
            transfer.let_go(runtime, lost, kept=self.fence.claims)
        within = 3 * self.lease.lease_duration
        if regained:  # nobody else held them: only what webhooks named meanwhile
            recent = recently_refreshed(self.replica.strategy_objects(), within=within)
            transfer.regain(runtime, regained, recent=recent)
        if gained:
            self.standby.warmed(gained)
            objects = self.replica.strategy_objects()
            urgent = recently_refreshed(objects, within=within)
            at_rest = {
                config_name(o["metadata"]["namespace"], o["metadata"]["name"])
                for o in objects
                if quiet(o)
            }
            self.take_over(runtime, gained, urgent=urgent, at_rest=at_rest)
        if moved.any:
            self.share_budgets(runtime)
        return bool(gained)

    def take_over(
        self, runtime: RuntimePort, repositories: set[str], *, urgent: set[str], at_rest: set[str]
    ) -> None:
        transfer.take_over(runtime, repositories, urgent=urgent, at_rest=at_rest)

    def warm_up(self, runtime: RuntimePort, shards: set[str]) -> None:
        """Clone or fetch the repositories of ``shards`` before this replica joins and is
        given them."""
        repositories = self.placement.repositories(shards)
        fetched = transfer.warm_up(runtime, repositories)
        self.standby.warmed(repositories)
        log.info("warmed up", extra={"shards": len(shards), "repositories": fetched})

    def look_ahead(self, shards: set[str]) -> None:
        """On the Lease loop: clone, in the background, the repositories of the shards
        this replica would be given if a peer died (``standby``)."""
        self.standby.want(self.placement.repositories(shards))

    def share_budgets(self, runtime: RuntimePort) -> None:
        """Give each credential's limiter this replica's share of its limits, and the
        group's log of the limits counted over a window (``spending``)."""
        runtime.share_budgets(self.budget_shares(), self.fleets(runtime.config))

    def fleets(self, config: Config) -> dict[str, LeaseFleet]:
        """Each SCM provider's shared spending log (made once per provider)."""
        found = self._fleets
        for provider in config.scm_providers:
            if provider.name not in found:
                found[provider.name] = LeaseFleet(
                    self.kube,
                    namespace=self.lease.namespace,
                    group=self.settings.group,
                    provider=provider.name,
                    watched=self.coordinator.watched,
                    timeout=self.lease.renew_deadline,
                )
        return {p.name: found[p.name] for p in config.scm_providers}

    # --- HTTP ------------------------------------------------------------------------------

    def routes(self) -> Routes:
        return ShardRoutes(self, runtime=lambda: self.replica.runtime)

    def describe(self) -> dict[str, Any]:
        return {"shards": len(self.coordinator.held())}
