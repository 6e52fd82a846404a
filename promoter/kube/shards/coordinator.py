"""Sharded replicas: membership, the assignment, and the shard Leases of one replica.

The group's Leases are watched into a local cache (``Watcher`` over ``LeaseSource``).
A round runs when one of them changes hands (a member joins or leaves, a shard is
released or taken) and at least every ``retry_period``. It computes the assignment
(``promoter.kube.shards.assignment``) from the live members and the shards' weights, renews
this replica's member Lease and its shard Leases when due (``renew_every``: once a
third of the renew deadline has passed, or only ``RENEW_TRIES`` rounds are left before
the hold would lapse), and then, shard by shard:

* hands over those it holds but is no longer assigned (or all of them when stopping):
  the fence refuses new writes at once, and the Lease is released (holder cleared) as
  soon as the writes in flight have ended, so the next owner takes it without waiting;
* acquires those it is assigned that are free, or whose Lease has not changed for
  ``lease_duration`` on this replica's clock (its holder died or was cut off) while the
  API server answered (``outage``: after it failed, every Lease counts as renewed when
  it comes back), and whose holder is not a live member (a live holder releases what
  it is no longer assigned): no more than its share and what the membership says is
  gone;
* notices the shards another replica took from it, and those whose hold lapsed before
  it could renew them (no write for them meanwhile; renewed with nobody else having
  held them, they are *regained*: what webhooks named meanwhile is read again).

So a hand-over takes a few watch events (tens of milliseconds), not rounds. A member
is live while its member Lease changes within ``lease_duration``; a dead replica's
member and shard Leases stop changing together, so its shards are taken over
``lease_duration`` after its last renewal was seen (the loop wakes when a Lease is due
to lapse, not at the next ``retry_period``). Replicas
may disagree on the member set for a moment; the Leases decide, never the assignment.

Threads. The loop runs the rounds on a thread of its own; a round acts on its shards on
up to ``WRITERS`` pool threads at once (a write per Lease). What those threads share is
each behind a lock: the shards held, ever held, regained and being handed over, and the
transitions counted, in ``Holdings`` (one lock); the copies of the Leases written in
``LeaseWriter``, when each was seen to change in ``Observed``; the writes in flight in
the ``ShardFence``. ``table`` and ``rounds`` are written by the loop alone (``table``
replaced whole after each round, never changed), so other threads read them without a
lock; ``_stopping`` is a flag the stopping thread sets and the rounds read. Nothing else
is shared.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor

from promoter.kube.client.api import Kube, KubeError, Obj
from promoter.kube.client.watcher import Watcher
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.shards.assignment import Table, Work, assign
from promoter.kube.shards.fence import ShardFence
from promoter.kube.shards.holdings import Holdings
from promoter.kube.shards.lease_writer import LeaseWriter, renew_every
from promoter.kube.shards.leases import (
    MEMBER,
    LeaseSource,
    Observed,
    Seen,
    member_lease,
    shard_lease,
)
from promoter.kube.shards.metrics import record_round, record_transition
from promoter.kube.shards.outage import Outage
from promoter.kube.shards.settings import ShardSettings
from promoter.kube.shards.standby import LookAhead

log = logging.getLogger("promoter.kube.shards")

LAPSE_MARGIN = 0.01
"""Seconds past a Lease's lapse before the round that takes it over (clock reads round)."""

WRITERS = 8
"""Lease writes a round makes at once: renewing 64 shards one after the other would take
longer than the renew deadline on a slow API server."""


class ShardCoordinator:
    """Runs the loop in a thread; ``on_change(gained, lost, regained)`` after a round that
    moved shards (``regained``: held again after a lapse, by nobody else meanwhile)."""

    def __init__(
        self,
        kube: Kube,
        lease: LeaseSettings,
        settings: ShardSettings,
        identity: str,
        *,
        work: Callable[[], Work],
        fence: ShardFence,
        on_change: Callable[[set[str], set[str], set[str]], None] = lambda *moved: None,
        on_revoke: Callable[[str], None] = lambda shard: None,
        ready: Callable[[], bool] = lambda: True,
        prepare: Callable[[set[str]], None] = lambda shards: None,
        standby: Callable[[set[str]], None] = lambda shards: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_revoke(shard)``: a hand-over began (no new write on the shard from now).
        ``ready()``: whether this replica can work (it has listed the objects); until
        then it does not join. ``prepare(shards)``: before joining, warm up for the shards
        it is about to be given (clone their repositories), so that taking them over
        does not start with the clones. ``standby(shards)``: what a peer's death would
        bring (``standby.LookAhead``); it must not block."""
        self.kube = kube
        self.lease = lease
        self.settings = settings
        self.identity = identity
        self.work = work
        self.fence = fence
        self.on_change = on_change
        self.on_revoke = on_revoke
        self.ready = ready
        self.prepare = prepare
        self.look_ahead = LookAhead(identity, standby)
        self._joined = False
        self.clock = clock
        self.observed = Observed()
        self.table = Table({}, {}, {}, Work({}, {}))
        self.rounds = 0
        self.holdings = Holdings()
        self.outage = Outage(
            self.observed,
            identity=identity,
            clock=clock,
            gone_after=lease.lease_duration,
            noticed_late=lease.renew_deadline,
        )
        self.leases = Watcher(
            LeaseSource(kube, settings.group, self.outage),
            "leases",
            lease.namespace,
            self._changed,
            max_backoff=lease.retry_period,
            on_error=self.outage.failed,
        )
        self.writer = LeaseWriter(
            kube,
            namespace=lease.namespace,
            group=settings.group,
            duration=lease.lease_duration,
            observed=self.observed,
            clock=clock,
            timeout=lease.renew_deadline,
            health=self.outage,
        )
        self._pool = ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="shard-lease")
        self._stopping = False
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="shard-leases", daemon=True)

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        self.leases.start()
        self._thread.start()

    def hand_over_all(self) -> None:
        """Leave the group: from the next round on, every shard is handed over, each
        released as soon as its writes in flight end (``stop`` releases what is left)."""
        self._stopping = True
        self._wake.set()

    def stop(self, *, release: bool = True) -> None:
        """Stop the loop; with ``release``, hand every shard over and leave the group at
        once (the writes in flight end first: call it after the workers stopped)."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=self.lease.retry_period * 2 + 10)
        if release:
            self._stopping = True
            try:
                self._round()  # releases every shard: nothing is in flight any more
                self.kube.delete_lease(self.lease.namespace, self._member_name)
            except KubeError as exc:
                log.warning("leases not released", extra={"error": str(exc)})
        self.leases.stop()
        self._pool.shutdown(wait=True)

    @property
    def _member_name(self) -> str:
        return member_lease(self.settings.group, self.identity)

    def held(self) -> set[str]:
        return self.holdings.held()

    @property
    def transitions(self) -> Counter[str]:
        """Shards acquired, released (handed over), lost (taken by another replica) and
        lapsed (not renewed within the renew deadline), so far."""
        return self.holdings.transitions()

    def _changed(self, kind: str, obj: Obj, before: Obj | None) -> None:
        """A watch event: a round at once when a Lease changed hands (not on renewals)."""
        holder = (obj.get("spec") or {}).get("holderIdentity")
        was = ((before or {}).get("spec") or {}).get("holderIdentity")
        if kind != "MODIFIED" or holder != was:
            self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.leases.synced.is_set():
                try:
                    self._round()
                except Exception:  # never let the loop die: the next round tries again
                    log.exception("shard round failed")
            self._wake.wait(self._pause())
            self._wake.clear()

    def _pause(self) -> float:
        """Until the next round: ``retry_period``, or less when a Lease lapses sooner (a
        dead replica's shards are taken over at the lease's end, not up to a retry
        later)."""
        lapse = self.observed.next_lapse(self.clock(), self.lease.lease_duration)
        if lapse is None:
            return self.lease.retry_period
        return min(self.lease.retry_period, lapse + LAPSE_MARGIN)

    # --- one round -------------------------------------------------------------------------

    def _round(self) -> None:
        now = self.clock()
        listed = {s.name: s for s in map(Seen.of, self.leases.objects())}
        self.observed.update(listed, now)
        members = self._members(listed, now)
        work = self.work()
        assigned = assign(work.weights, members)
        if not self._joined and not self._stopping:
            if not self.ready():
                return
            self._joined = True
            self.prepare({shard for shard, member in assigned.items() if member == self.identity})
            now = self.clock()
        outages = self.outage.ended
        self._renew_member(self._latest(listed, self._member_name), now)
        if self.outage.ended != outages:  # the API server came back: nobody is gone yet
            now = self.clock()
            members = self._members(listed, now)
            assigned = assign(work.weights, members)
        lapsed = self.holdings.lapse(self.fence.held())
        if lapsed:  # not renewed in time: when renewed again, they are read afresh
            log.warning("shard holds lapsed", extra={"shards": sorted(lapsed)})
            for _ in lapsed:
                record_transition(self.identity, "lapsed")
        before = self.holdings.begin_round()

        def act(shard: str) -> str:
            seen = self._latest(listed, shard_lease(self.settings.group, shard))
            mine = assigned.get(shard) == self.identity
            return self._shard(shard, seen, mine, work, now, live=members)

        shards = sorted(set(work.weights) | before)
        holders = dict(zip(shards, self._pool.map(act, shards), strict=True))
        self.table = Table(members, assigned, holders, work)
        self.rounds += 1
        held = self.holdings.held()
        record_round(
            self.identity, members=len(members), weights=work.weights, assigned=assigned, held=held
        )
        if self._joined and not self._stopping:
            self.look_ahead(members, work.weights)
        gained, lost, regained = self.holdings.end_round(before)
        if gained or lost or regained:
            log.info(
                "shards moved",
                extra={
                    "gained": sorted(gained),
                    "lost": sorted(lost),
                    "regained": sorted(regained),
                    "members": len(members),
                },
            )
            self.on_change(gained, lost, regained)

    def _members(self, listed: dict[str, Seen], now: float) -> dict[str, str]:
        """The live members (those whose member Lease changed within a lease on our
        clock) and their addresses, this replica among them unless it is leaving."""
        duration = self.lease.lease_duration
        members = {
            s.holder: s.address
            for s in listed.values()
            if s.role == MEMBER and s.holder and self.observed.age(s.name, now) < duration
        }
        members.pop(self.identity, None)
        if not self._stopping:
            members[self.identity] = self.settings.address
        return members

    def _latest(self, listed: dict[str, Seen], name: str) -> Seen | None:
        return self.writer.latest(listed, name)

    def _due(self, name: str, now: float) -> bool:
        return self.writer.due(name, now, renew_every(self.lease))

    def _shard(
        self,
        shard: str,
        seen: Seen | None,
        mine: bool,
        work: Work,
        now: float,
        *,
        live: Collection[str] = (),
    ) -> str:
        """Act on one shard; who holds it afterwards (as far as we know). ``live``: the
        members seen live this round."""
        holder = seen.holder if seen is not None else ""
        if holder != self.identity and self.holdings.holds(shard):
            self._lose(shard, "taken over")  # another replica holds it: not ours any more
        if holder == self.identity:
            if mine and not self._stopping:
                self.holdings.keep(shard)
                held = self.holdings.holds(shard)
                if (not held or self._due(seen.name if seen else "", now)) and self._write(
                    shard, seen, work, holder=self.identity
                ):
                    self.holdings.renew(shard, was_held=held)
                return self.identity
            return self._hand_over(shard, seen, work, now)
        if not mine or self._stopping:
            return holder
        free = not holder or self._gone(holder, seen, now, live)
        if free and self._write(shard, seen, work, holder=self.identity):
            if self.holdings.acquire(shard):
                record_transition(self.identity, "acquired")
            return self.identity
        return holder

    def _gone(self, holder: str, seen: Seen | None, now: float, live: Collection[str]) -> bool:
        """Whether a shard's ``holder`` is gone: its Lease unchanged for a lease on our
        clock, the API server answering (``outage``), and the holder not a live member."""
        if holder in live or not self.outage.trusted():
            return False
        return self.observed.age(seen.name if seen else "", now) >= self.lease.lease_duration

    def _hand_over(self, shard: str, seen: Seen | None, work: Work, now: float) -> str:
        """A shard we hold but should not: no new writes; released once drained."""
        self.fence.revoke(shard)
        first, since = self.holdings.revoke(shard, now)
        if first:
            self.on_revoke(shard)
        if self.fence.in_flight(shard) and now - since < self.lease.renew_deadline:
            self._wake_when_drained(shard)
            if self._due(seen.name if seen else "", now):
                self._write(shard, seen, work, holder=self.identity)  # keep the writes covered
            return self.identity
        if self._write(shard, seen, work, holder=""):
            self._lose(shard, "released")
            self.holdings.count("released")
            record_transition(self.identity, "released")
            return ""
        return self.identity

    def _wake_when_drained(self, shard: str) -> None:
        def wait() -> None:
            self.fence.wait_drained(shard, self.lease.renew_deadline)
            self._wake.set()

        threading.Thread(target=wait, name=f"drain-{shard}", daemon=True).start()

    def _lose(self, shard: str, why: str) -> None:
        self.fence.drop(shard)
        taken = why == "taken over"
        if self.holdings.lose(shard, taken=taken):
            if taken:
                record_transition(self.identity, "lost")
            log.info("shard left", extra={"shard": shard, "why": why})

    def _write(self, shard: str, seen: Seen | None, work: Work, *, holder: str) -> bool:
        """Create or replace the shard's Lease naming ``holder``; True when written."""
        address = self.settings.address if holder else ""
        started = self.writer.put_shard(shard, seen, work, holder=holder, address=address)
        if started is None:
            return False
        if holder:
            self.fence.renewed(shard, started)
        return True

    def _renew_member(self, seen: Seen | None, now: float) -> None:
        if self._stopping or self._due(self._member_name, now):
            holder = "" if self._stopping else self.identity
            owner = self.settings.owner
            self.writer.put_member(self._member_name, seen, holder, self.settings.address, owner)

    # --- what others read ----------------------------------------------------------------

    def watched(self, name: str) -> Obj | None:
        """Lease ``name`` of the group as the watch last saw it."""
        return self.leases.cache.get((self.lease.namespace, name))

    def holder_of(self, shard: str) -> tuple[str, str] | None:
        """The replica holding ``shard`` and its address, as of the last round."""
        table = self.table
        holder = table.holders.get(shard, "")
        if not holder:
            return None
        return holder, table.members.get(holder, "")
