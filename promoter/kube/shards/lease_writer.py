"""Writes a replica's own Leases: optimistic, on top of the newest copy it knows of.

The watch shows a Lease we wrote a moment after the write returns; until then the copy
the write returned is the newest, and renewing on top of the watch's older copy would
be refused (409). So each write is kept, and a write goes on top of whichever copy is
newer. A refused write forgets ours: the next one starts from the watch's. A Lease held
is written again every ``renew_every``. A write is given up on after ``timeout`` (the
renew deadline: a renewal answered later would start a hold already over), and
``health`` is told how each write was answered (``outage``).

A round writes its Leases on several threads at once: the copies kept are behind a lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from promoter.kube.client.api import Kube, KubeError, Obj
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.shards.assignment import Work
from promoter.kube.shards.leases import (
    ADDRESS_ANNOTATION,
    MEMBER,
    REPOSITORIES_ANNOTATION,
    SHARD,
    STRATEGIES_ANNOTATION,
    Health,
    Observed,
    Seen,
    lease_object,
    newest,
    shard_lease,
)

log = logging.getLogger("promoter.kube.shards")

RENEW_TRIES = 3
"""Rounds a held Lease has left for its renewal when it is renewed: a write that fails
or answers late is tried again that often before the hold lapses."""


def renew_every(lease: LeaseSettings) -> float:
    """Seconds between two renewals of a Lease this replica holds.

    A hold lasts ``renew_deadline`` from the start of its last renewal; renewing at
    every round (``retry_period``), as one leader's Lease is, would write each of a
    group's Leases every round: 138 writes every 2 s at 128 shards and 10 replicas, each
    a watch event on every replica. A Lease is renewed at the first round that leaves
    fewer than ``RENEW_TRIES`` more before the hold would lapse (half a round early,
    for rounds that run a little early), or once a third of the deadline has passed,
    whichever comes first, and at every round when the timings leave no room for
    that: every 4 s with the manifests' 15/10/2 s, every round with shorter deadlines.
    """
    tries = lease.renew_deadline - (RENEW_TRIES + 0.5) * lease.retry_period
    return max(lease.retry_period * 0.5, min(tries, lease.renew_deadline / 3))


class LeaseWriter:
    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        group: str,
        duration: float,
        observed: Observed,
        clock: Callable[[], float],
        timeout: float | None = None,
        health: Health | None = None,
    ) -> None:
        self.kube = kube
        self.timeout = timeout
        self.health = health
        self.namespace = namespace
        self.group = group
        self.duration = duration
        self.observed = observed
        self.clock = clock
        self._lock = threading.Lock()
        self._written: dict[str, tuple[Obj, float]] = {}
        """Our latest write of each Lease, and when it began."""

    def latest(self, listed: dict[str, Seen], name: str) -> Seen | None:
        """The newest copy of Lease ``name``: the watch's, or the one we last wrote."""
        with self._lock:
            ours = self._written.get(name)
        seen = listed.get(name)
        found = newest(seen.lease if seen else None, ours[0] if ours else None)
        return Seen.of(found) if found is not None else None

    def due(self, name: str, now: float, every: float) -> bool:
        """Whether our Lease ``name`` was last written ``every`` seconds ago or more."""
        with self._lock:
            written = self._written.get(name)
        return written is None or now - written[1] >= every

    def put(
        self,
        name: str,
        role: str,
        holder: str,
        annotations: dict[str, str],
        seen: Seen | None,
        *,
        owner: Obj | None = None,
    ) -> float | None:
        """Create or replace Lease ``name`` naming ``holder``: when the write began, or
        None when it was refused or failed."""
        started = self.clock()
        body = lease_object(
            name=name,
            namespace=self.namespace,
            group=self.group,
            role=role,
            holder=holder,
            duration=self.duration,
            annotations=annotations,
            base=seen.lease if seen is not None else None,
            owner=owner,
        )
        try:
            written = self.kube.write_lease(
                self.namespace, body, create=seen is None, timeout=self.timeout
            )
        except KubeError as exc:
            with self._lock:
                self._written.pop(name, None)
            if self.health is not None:
                self.health.failed(exc)
            log.info("lease not written", extra={"lease": name, "error": str(exc)})
            return None
        if self.health is not None:
            self.health.answered()
        with self._lock:
            self._written[name] = (written, started)
        self.observed.wrote(Seen.of(written), started)
        return started

    def put_shard(
        self, shard: str, seen: Seen | None, work: Work, *, holder: str, address: str
    ) -> float | None:
        """Create or replace ``shard``'s Lease naming ``holder`` (reached at ``address``),
        annotated with what the shard weighs: when the write began, or None."""
        annotations = {
            ADDRESS_ANNOTATION: address,
            STRATEGIES_ANNOTATION: str(int(work.weights.get(shard, 0))),
            REPOSITORIES_ANNOTATION: str(len(work.repositories.get(shard, []))),
        }
        return self.put(shard_lease(self.group, shard), SHARD, holder, annotations, seen)

    def put_member(
        self, name: str, seen: Seen | None, holder: str, address: str, owner: Obj | None
    ) -> float | None:
        """Create or replace the member Lease ``name``: ``holder`` ("" when leaving),
        reached at ``address``, owned by ``owner`` (its Pod)."""
        annotations = {ADDRESS_ANNOTATION: address}
        return self.put(name, MEMBER, holder, annotations, seen, owner=owner)
