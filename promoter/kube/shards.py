"""Sharded replicas: membership, the assignment, and the shard Leases of one replica.

Every ``retry_period`` the loop lists the group's Leases (one call), renews this
replica's member Lease, computes the assignment (``promoter.kube.assignment``) from the
live members and the shards' weights, and then, shard by shard:

* renews the shard Leases it holds and is assigned;
* hands over those it holds but is no longer assigned (or all of them when stopping):
  the fence refuses new writes at once, and the Lease is released (holder cleared) as
  soon as the writes in flight have ended, so the next owner takes it without waiting;
* acquires those it is assigned that are free, or whose Lease has not changed for
  ``lease_duration`` on this replica's clock (its holder died or was cut off);
* notices the shards another replica took from it, and those whose hold lapsed before
  it could renew them (they count as gained again, and are read afresh, once renewed).

A member is live while its member Lease changes within ``lease_duration``; a dead
replica's member and shard Leases stop changing together, so its shards are taken over
``lease_duration`` (plus at most one ``retry_period``) after its last renewal. Replicas
may disagree on the member set for a moment; the Leases decide, never the assignment.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kubernetes import client as k8s

from promoter.kube.api import Kube, KubeError
from promoter.kube.assignment import assign
from promoter.kube.fence import ShardFence
from promoter.kube.leader import LeaseSettings
from promoter.kube.leases import (
    ADDRESS_ANNOTATION,
    MEMBER,
    REPOSITORIES_ANNOTATION,
    SHARD,
    STRATEGIES_ANNOTATION,
    Observed,
    Seen,
    lease_object,
    member_lease,
    selector,
    shard_lease,
)
from promoter.kube.shard_metrics import record_round, record_transition

log = logging.getLogger("promoter.kube.shards")


@dataclass(frozen=True)
class ShardSettings:
    """How repositories are sharded, and where this replica is reached."""

    count: int = 64
    group: str = "promoter"
    address: str = ""
    """``http://host:port`` other replicas forward webhooks and API writes to."""
    peer_token: str | None = field(default=None, repr=False)
    """The secret replicas sign forwarded work with (``promoter.kube.peers``)."""
    owner: k8s.V1OwnerReference | None = None
    """The Pod that owns the member Lease (Kubernetes deletes the Lease with it)."""

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 4096:
            raise ValueError("the shard count must be between 1 and 4096")


@dataclass(frozen=True)
class Work:
    """The shards with work now: their weight (strategies) and repositories."""

    weights: Mapping[str, float]
    repositories: Mapping[str, list[str]]


@dataclass(frozen=True)
class Table:
    """What the last round saw and decided (for the API, metrics and forwarding)."""

    members: dict[str, str]
    """Live member -> its address."""
    assigned: dict[str, str]
    """Shard -> the member the assignment gives it to."""
    holders: dict[str, str]
    """Shard -> the member whose Lease holds it now ("" when free)."""
    work: Work


class ShardCoordinator:
    """Runs the loop in a thread; ``on_change(gained, lost)`` after a round that moved shards."""

    def __init__(
        self,
        kube: Kube,
        lease: LeaseSettings,
        settings: ShardSettings,
        identity: str,
        *,
        work: Callable[[], Work],
        fence: ShardFence,
        on_change: Callable[[set[str], set[str]], None] = lambda gained, lost: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.lease = lease
        self.settings = settings
        self.identity = identity
        self.work = work
        self.fence = fence
        self.on_change = on_change
        self.clock = clock
        self.observed = Observed()
        self.table = Table({}, {}, {}, Work({}, {}))
        self.rounds = 0
        self.transitions: Counter[str] = Counter()
        """Shards acquired, released (handed over), lost (taken by another replica) and
        lapsed (not renewed within the renew deadline)."""
        self._held: set[str] = set()
        self._revoked_at: dict[str, float] = {}
        self._stopping = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shard-leases", daemon=True)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, release: bool = True) -> None:
        """Stop the loop; with ``release``, hand every shard over and leave the group at
        once (the writes in flight end first: call it after the workers stopped)."""
        self._stop.set()
        self._thread.join(timeout=self.lease.retry_period * 2 + 10)
        if not release:
            return
        self._stopping = True
        for shard in list(self._held):
            self.fence.revoke(shard)
        try:
            self._round()  # releases what is drained
            self.kube.delete_lease(self.lease.namespace, self._member_name)
        except KubeError as exc:
            log.warning("leases not released", extra={"error": str(exc)})

    @property
    def _member_name(self) -> str:
        return member_lease(self.settings.group, self.identity)

    def held(self) -> set[str]:
        return set(self._held)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except Exception:  # never let the loop die: the next round tries again
                log.exception("shard round failed")
            self._stop.wait(self.lease.retry_period)

    # --- one round -------------------------------------------------------------------------

    def _round(self) -> None:
        now = self.clock()
        listed = {
            s.name: s
            for s in map(
                Seen.of, self.kube.list_leases(self.lease.namespace, selector(self.settings.group))
            )
        }
        self.observed.update(listed, now)
        self._renew_member(listed.get(self._member_name))
        duration = self.lease.lease_duration
        members = {
            s.holder: s.address
            for s in listed.values()
            if s.role == MEMBER and s.holder and self.observed.age(s.name, now) < duration
        }
        if self._stopping:
            members.pop(self.identity, None)
        else:
            members[self.identity] = self.settings.address
        work = self.work()
        assigned = assign(work.weights, members)
        lapsed = self._held - self.fence.held()
        if lapsed:  # not renewed in time: when renewed again, they are read afresh
            log.warning("shard holds lapsed", extra={"shards": sorted(lapsed)})
            self._held -= lapsed
            for _ in lapsed:
                self._count("lapsed")
        before = set(self._held)
        holders: dict[str, str] = {}
        for shard in sorted(set(work.weights) | self._held):
            seen = listed.get(shard_lease(self.settings.group, shard))
            holder = self._shard(shard, seen, assigned.get(shard) == self.identity, work, now)
            holders[shard] = holder
        self.table = Table(members, assigned, holders, work)
        self.rounds += 1
        record_round(self.identity, self.table, self._held)
        gained, lost = self._held - before, before - self._held
        if gained or lost:
            log.info(
                "shards moved",
                extra={"gained": sorted(gained), "lost": sorted(lost), "members": len(members)},
            )
            self.on_change(gained, lost)

    def _shard(self, shard: str, seen: Seen | None, mine: bool, work: Work, now: float) -> str:
        """Act on one shard; who holds it afterwards (as far as we know)."""
        holder = seen.holder if seen is not None else ""
        if shard in self._held and holder != self.identity:
            self._lose(shard, "taken over")  # another replica holds it: not ours any more
        if holder == self.identity:
            if mine and not self._stopping:
                self._revoked_at.pop(shard, None)
                if self._write(shard, seen, work, holder=self.identity):
                    self._gain(shard)
                return self.identity
            return self._hand_over(shard, seen, work, now)
        if not mine or self._stopping:
            return holder
        free = not holder or self.observed.age(seen.name if seen else "", now) >= (
            self.lease.lease_duration
        )
        if free and self._write(shard, seen, work, holder=self.identity):
            self._gain(shard)
            self._count("acquired")
            return self.identity
        return holder

    def _hand_over(self, shard: str, seen: Seen | None, work: Work, now: float) -> str:
        """A shard we hold but should not: no new writes; released once drained."""
        self.fence.revoke(shard)
        since = self._revoked_at.setdefault(shard, now)
        drained = self.fence.in_flight(shard) == 0
        if not drained and now - since < self.lease.renew_deadline:
            self._write(shard, seen, work, holder=self.identity)  # keep the writes covered
            return self.identity
        if self._write(shard, seen, work, holder=""):
            self._lose(shard, "released")
            self._count("released")
            return ""
        return self.identity

    def _count(self, kind: str) -> None:
        self.transitions[kind] += 1
        record_transition(self.identity, kind)

    def _gain(self, shard: str) -> None:
        self._held.add(shard)

    def _lose(self, shard: str, why: str) -> None:
        self.fence.drop(shard)
        self._revoked_at.pop(shard, None)
        if shard in self._held:
            self._held.discard(shard)
            if why == "taken over":
                self._count("lost")
            log.info("shard left", extra={"shard": shard, "why": why})

    def _write(self, shard: str, seen: Seen | None, work: Work, *, holder: str) -> bool:
        """Create or replace the shard's Lease naming ``holder``; True when written."""
        started = self.clock()
        repos = work.repositories.get(shard, [])
        annotations = {
            ADDRESS_ANNOTATION: self.settings.address if holder else "",
            STRATEGIES_ANNOTATION: str(int(work.weights.get(shard, 0))),
            REPOSITORIES_ANNOTATION: str(len(repos)),
        }
        body = lease_object(
            name=shard_lease(self.settings.group, shard),
            namespace=self.lease.namespace,
            group=self.settings.group,
            role=SHARD,
            holder=holder,
            duration=self.lease.lease_duration,
            annotations=annotations,
            base=seen.lease if seen is not None else None,
        )
        try:
            if seen is None:
                written = self.kube.create_lease(self.lease.namespace, body)
            else:
                written = self.kube.replace_lease(self.lease.namespace, body)
        except KubeError as exc:
            log.info("shard lease not written", extra={"shard": shard, "error": str(exc)})
            return False
        self.observed.wrote(Seen.of(written), started)
        if holder:
            self.fence.renewed(shard, started)
        return True

    def _renew_member(self, seen: Seen | None) -> None:
        body = lease_object(
            name=self._member_name,
            namespace=self.lease.namespace,
            group=self.settings.group,
            role=MEMBER,
            holder="" if self._stopping else self.identity,
            duration=self.lease.lease_duration,
            annotations={ADDRESS_ANNOTATION: self.settings.address},
            base=seen.lease if seen is not None else None,
            owner=self.settings.owner,
        )
        try:
            if seen is None:
                self.kube.create_lease(self.lease.namespace, body)
            else:
                self.kube.replace_lease(self.lease.namespace, body)
        except KubeError as exc:
            log.info("member lease not renewed", extra={"error": str(exc)})

    # --- what others read ----------------------------------------------------------------

    def holder_of(self, shard: str) -> tuple[str, str] | None:
        """The replica holding ``shard`` and its address, as of the last round."""
        table = self.table
        holder = table.holders.get(shard, "")
        if not holder:
            return None
        return holder, table.members.get(holder, "")
