"""A credential's spending kept for the whole shard group, in one Lease of its own.

Each SCM provider's credential has a Lease ``<group>-budget-<provider>`` (the group's
label, role ``budget``: the replicas' Lease watch sees it) whose annotation
``promoter.argoproj.io/spent`` is the fleet's log of the windows the SCM counts
(``scm_plugins.fleet.Spent``). A replica takes room for a call by writing the log back
with the call added, on top of the copy it read (its resourceVersion): when another
replica wrote first, the API server refuses (409) and the log is read again, so no two
replicas ever take the same room. A content-creating call costs one such write; points
are taken ``GRANT`` at a time and spent locally until used or a minute old.

What it costs: one API write per content call (GitHub allows 80 a minute and 500 an hour
per credential, so at most 1.3 writes a second, a few an hour in a quiet fleet), and one
per ``GRANT`` points (900 a minute at most: 0.75 writes a second flat out), each seen by
every replica's Lease watch; a conflict costs a read more. When the API server does not
answer, ``FleetUnavailable`` sends the credential's budget back to its share of each
window (``scm_plugins.budget``): reads go on; writes wait for the fence anyway.

Thread-safe: one lock per credential around its read-and-write.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable

from prometheus_client import Counter

from promoter.kube.client.api import Kube, KubeError, Obj
from promoter.kube.shards.leases import lease_object, newest
from promoter.metrics import REGISTRY
from scm_plugins.fleet import GRANT, FleetUnavailable, Spent, Want, Windows

log = logging.getLogger("promoter.kube.shards")

BUDGET = "budget"
SPENT_ANNOTATION = "promoter.argoproj.io/spent"
TRIES = 4
"""Reads and writes of the log a call tries before it comes back later (contention)."""
CONTENDED = 0.05
"""Seconds a call comes back after when other replicas kept writing the log first."""

WRITES = Counter(
    "promoter_shard_budget_writes_total",
    "Writes of a credential's shared spending log (a Lease), by outcome",
    ["provider", "outcome"],
    registry=REGISTRY,
)


def budget_lease(group: str, provider: str) -> str:
    """The Lease name of ``provider``'s log (a DNS label: lowercase, dashes)."""
    return f"{group}-budget-" + re.sub(r"[^a-z0-9-]+", "-", provider.lower()).strip("-")


class LeaseFleet:
    """``scm_plugins.fleet.Fleet`` over a Lease; ``watched(name)``: the Lease as the
    replica's watch last saw it."""

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        group: str,
        provider: str,
        watched: Callable[[str], Obj | None],
        timeout: float,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.group = group
        self.provider = provider
        self.name = budget_lease(group, provider)
        self.watched = watched
        self.timeout = timeout
        self._lock = threading.Lock()
        self._written: Obj | None = None
        self._stale = False
        """A write was refused: read the Lease from the API server before the next."""
        self._grants: list[tuple[float, int]] = []
        """Points taken and not spent yet: (when taken, how many)."""
        self.writes = 0
        self.conflicts = 0

    def take(self, want: Want, limits: Windows, *, now: float) -> float:
        with self._lock:
            if not want.content and self._spend_granted(want.points, now, limits):
                return 0.0
            asked = want.points if want.content else max(GRANT, want.points)
            for _ in range(TRIES):
                lease = self._current()
                spent = Spent.parse(
                    ((lease or {}).get("metadata", {}).get("annotations") or {}).get(
                        SPENT_ANNOTATION
                    )
                )
                spent.expire(now, limits)
                wait = spent.wait(Want(want.content, asked, want.reserve), limits, now)
                if wait > 0 and asked > want.points:
                    asked = want.points  # no room for a grant: for this call alone, then
                    wait = spent.wait(want, limits, now)
                if wait > 0:
                    return wait
                spent.add(now, limits, content=want.content, points=asked)
                if self._write(lease, spent):
                    if asked > want.points:
                        self._grants.append((now, asked - want.points))
                    return 0.0
            return CONTENDED

    def _spend_granted(self, points: int, now: float, limits: Windows) -> bool:
        """Spend ``points`` from the grants still counted in the log; whether they did."""
        self._grants = [(at, n) for at, n in self._grants if at > now - limits.minute and n > 0]
        if sum(n for _, n in self._grants) < points:
            return False
        left = points
        for i, (at, n) in enumerate(self._grants):
            used = min(n, left)
            self._grants[i] = (at, n - used)
            left -= used
            if not left:
                break
        return True

    def _current(self) -> Obj | None:
        """The newest copy of the log's Lease: the watch's or ours, or the API server's
        after a refused write (None when it does not exist yet)."""
        if self._stale:
            try:
                found = self.kube.get_lease(self.namespace, self.name)
            except KubeError as exc:
                raise FleetUnavailable(str(exc)) from exc
            self._stale = False
            self._written = found
            return found
        return newest(self.watched(self.name), self._written)

    def _write(self, lease: Obj | None, spent: Spent) -> bool:
        """Write ``spent`` on top of ``lease``: whether it was written (False: another
        replica wrote first; ``FleetUnavailable`` when the API server does not answer)."""
        body = lease_object(
            name=self.name,
            namespace=self.namespace,
            group=self.group,
            role=BUDGET,
            holder="",
            duration=1.0,
            annotations={SPENT_ANNOTATION: spent.dump()},
            base=lease,
        )
        try:
            written = self.kube.write_lease(
                self.namespace, body, create=lease is None, timeout=self.timeout
            )
        except KubeError as exc:
            if exc.status in (404, 409):
                self.conflicts += 1
                self._stale = True
                WRITES.labels(self.provider, "conflict").inc()
                return False
            WRITES.labels(self.provider, "failed").inc()
            log.info("budget log not written", extra={"lease": self.name, "error": str(exc)})
            raise FleetUnavailable(str(exc)) from exc
        self.writes += 1
        WRITES.labels(self.provider, "written").inc()
        self._written = written
        return True
