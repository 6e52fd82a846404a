"""Shard Lease rounds driven by hand, on a clock the test moves: the Leases in memory as
the API server keeps them (optimistic writes, 409s), made to fail (500), to answer late
or to time out, and replicas whose rounds run one at a time, each seeing the Leases as
its watch would."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from promoter.kube.client.api import KubeError, Obj
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.shards.assignment import Work
from promoter.kube.shards.coordinator import ShardCoordinator
from promoter.kube.shards.fence import ShardFence
from promoter.kube.shards.settings import ShardSettings

LEASE = LeaseSettings("team", lease_duration=5.0, renew_deadline=3.0, retry_period=1.0)


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class LeaseStore:
    """The Leases of the API server; ``broken``: every write answers 500; ``hung``: every
    write times out (the test moves the clock); ``slow``: seconds a write takes (the
    clock moves that much before it answers: one write at a time, please)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.leases: dict[str, Obj] = {}
        self.version = 0
        self.broken = False
        self.slow = 0.0
        self.hung = False
        self.writes: list[tuple[float, str, str]] = []
        """(when, Lease, holder) of every write made."""

    def write_lease(
        self, namespace: str, body: Obj, *, create: bool, timeout: float | None = None
    ) -> Obj:
        if self.hung:
            raise KubeError("replace lease: API server unreachable: read timed out")
        if self.broken:
            raise KubeError("replace lease: 500 Internal Server Error", 500)
        self.clock.now += self.slow
        name = body["metadata"]["name"]
        known = self.leases.get(name)
        if create and known is not None:
            raise KubeError("create lease: 409 Conflict", 409)
        sent = body["metadata"].get("resourceVersion")
        if not create and (known is None or known["metadata"]["resourceVersion"] != sent):
            raise KubeError("replace lease: 409 Conflict", 409)
        self.version += 1
        written = copy.deepcopy(body)
        written["metadata"]["resourceVersion"] = str(self.version)
        self.leases[name] = written
        holder = (written.get("spec") or {}).get("holderIdentity") or ""
        self.writes.append((self.clock.now, name, holder))
        return copy.deepcopy(written)

    def delete_lease(self, namespace: str, name: str) -> None:
        self.leases.pop(name, None)

    def holders(self) -> dict[str, str]:
        """Shard -> holder, as the shard Leases say."""
        return {
            name.removeprefix("promoter-"): (lease.get("spec") or {}).get("holderIdentity") or ""
            for name, lease in self.leases.items()
            if "-member-" not in name
        }


def replica(
    store: LeaseStore, clock: Clock, name: str, shards: list[str], lease: LeaseSettings = LEASE
) -> ShardCoordinator:
    """A replica's Lease loop over ``store``, its rounds run by ``run_round``; each shard
    ``s`` holds the one repository ``repo-s``."""
    fence = ShardFence(
        shard_of=lambda repo: repo.removeprefix("repo-"),
        renew_deadline=lease.renew_deadline,
        clock=clock,
    )
    work = Work(dict.fromkeys(shards, 1.0), {s: [f"repo-{s}"] for s in shards})
    settings = ShardSettings(count=16, address=f"http://{name}")
    kube: Any = store
    return ShardCoordinator(
        kube, lease, settings, name, work=lambda: work, fence=fence, clock=clock
    )


def run_round(coordinator: ShardCoordinator, store: LeaseStore) -> None:
    """One round, after the replica's watch has shown it every Lease as they are."""
    coordinator.leases.cache = {
        ("team", name): copy.deepcopy(lease) for name, lease in store.leases.items()
    }
    coordinator._round()


def rounds(
    coordinators: list[ShardCoordinator],
    store: LeaseStore,
    clock: Clock,
    *,
    seconds: float,
    step: float = 1.0,
    each: Callable[[], None] = lambda: None,
) -> None:
    """Run a round of each replica every ``step`` seconds for ``seconds``."""
    end = clock.now + seconds
    while clock.now < end:
        for coordinator in coordinators:
            run_round(coordinator, store)
        each()
        clock.now += step


def close(*coordinators: ShardCoordinator) -> None:
    for coordinator in coordinators:
        coordinator._pool.shutdown(wait=True)
