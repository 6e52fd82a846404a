"""Whether the API server is answering this replica, and what its coming back means.

A peer's Lease that has not changed for ``lease_duration`` on this replica's clock is
taken to mean the peer is gone, and its shards are taken over. That holds only while
the API server took the peer's renewals: when it failed everyone (a restart, an etcd
hiccup, an overloaded control plane), nobody could renew, and every peer's Lease looks
as dead as the others' once it comes back. The first replica to look would take every
shard, and hand them back a few seconds later when the others renew (every repository
read twice, with cold caches).

So the API server's failures are noted as this replica meets them (a Lease write that
fails, or times out after the renew deadline; a list or a watch that breaks:
``failed``). When it answers again after that (``answered``), or the Leases are listed
again (``relisted``), every Lease counts as renewed at that moment
(``Observed.renewed_all``): a peer is taken for gone only once it has not renewed for a
whole lease *since the API server came back*. Meanwhile no Lease is taken over for its
age (``trusted``). A Lease that had not changed for a whole lease when the failures
began is not counted renewed: its holder was gone already (its shards taken over), and
counting it back would make it a member again for a lease, moving the shards the
assignment places differently with it, then moving them back. An answered failure (a
5xx, a 429) began when it was met; a call that timed out or found nobody may have met
the failure up to ``noticed_late`` (the renew deadline) earlier, and is counted so. A
replica's own renewals failing stop its writes at the renew deadline, as before
(``ShardFence``).

An API server that holds calls for less than the renew deadline and then answers them
is not an outage here: the peers' renewals are late by as much, and a Lease renewed
every ``renew_every`` (a third of the deadline at most) then looks unchanged for less
than the deadline and a third, short of the lease (5/3/1 s: 3.5 of 5 s; the manifests'
15/10/2 s: 13 of 15 s). Counting every slow answer as one would put off taking a dead
replica's shards for as long as the API server stays slow.

Thread-safe: the Lease writers, the Lease watch and the rounds call it.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

from prometheus_client import Counter

from promoter.kube.client.api import KubeError
from promoter.kube.shards.leases import Observed
from promoter.metrics import REGISTRY

log = logging.getLogger("promoter.kube.shards")

OUTAGES = Counter(
    "promoter_shard_api_outages_total",
    "Times the API server came back after failing this replica's Lease calls, or after"
    " holding one longer than a peer's spare time (every Lease counted renewed then)",
    ["replica"],
    registry=REGISTRY,
)


def transient(exc: KubeError) -> bool:
    """Whether an error says the API server is not serving (unreachable, timed out,
    5xx, 429), rather than answering (a conflict, a refusal)."""
    return exc.status == 0 or exc.status >= 500 or exc.status == 429


class Outage:
    def __init__(
        self,
        observed: Observed,
        *,
        identity: str,
        clock: Callable[[], float],
        gone_after: float = math.inf,
        noticed_late: float = 0.0,
    ) -> None:
        self.observed = observed
        self.identity = identity
        self.clock = clock
        self.gone_after = gone_after
        """Seconds unchanged after which a Lease's holder was gone when the failures
        began (the lease duration)."""
        self.noticed_late = noticed_late
        """Seconds a failure may have begun before a call that timed out said so."""
        self._lock = threading.Lock()
        self._failing: float | None = None
        """Since when the API server has failed this replica (None: it answers)."""
        self._began = 0.0
        """When those failures began at the earliest."""
        self.ended = 0
        """Outages seen to end so far."""

    def trusted(self) -> bool:
        """Whether the API server answers now: a Lease unchanged for a lease may then be
        taken over."""
        with self._lock:
            return self._failing is None

    def failed(self, exc: KubeError) -> None:
        """A call to the API server failed; nothing when it only refused (a 409)."""
        if not transient(exc):
            self.answered()
            return
        with self._lock:
            first = self._failing is None
            if first:
                self._failing = self.clock()
                self._began = self._failing - (self.noticed_late if exc.status == 0 else 0.0)
        if first:
            log.warning("API server failing", extra={"error": str(exc)})

    def answered(self) -> None:
        """A call was answered: after a failure, the API server comes back now."""
        with self._lock:
            since, self._failing = self._failing, None
            began = self._began
        if since is not None:
            self._back(self.clock(), since, began)

    def relisted(self) -> None:
        """The Leases were listed again (after a watch broke, or its history was lost):
        what the watch missed meanwhile is not known, so everything counts as renewed now."""
        now = self.clock()
        with self._lock:
            since, self._failing = self._failing, None
            began = self._began
        if since is None:  # a first listing, or a history compacted
            self.observed.renewed_all(now, live_since=now - self.gone_after - self.noticed_late)
        else:
            self._back(now, since, began)

    def _back(self, now: float, since: float, began: float) -> None:
        self.observed.renewed_all(now, live_since=began - self.gone_after)
        with self._lock:
            self.ended += 1
        OUTAGES.labels(self.identity).inc()
        log.warning(
            "API server answers again: every Lease counted renewed now",
            extra={"outage_s": round(now - since, 3)},
        )
