"""Writes a replica's own Leases: optimistic, on top of the newest copy it knows of.

The watch shows a Lease we wrote a moment after the write returns; until then the copy
the write returned is the newest, and renewing on top of the watch's older copy would
be refused (409). So each write is kept, and a write goes on top of whichever copy is
newer. A refused write forgets ours: the next one starts from the watch's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from promoter.kube.client.api import Kube, KubeError, Obj
from promoter.kube.shards.leases import Observed, Seen, lease_object, newest

log = logging.getLogger("promoter.kube.shards")


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
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.group = group
        self.duration = duration
        self.observed = observed
        self.clock = clock
        self._written: dict[str, tuple[Obj, float]] = {}
        """Our latest write of each Lease, and when it began."""

    def latest(self, listed: dict[str, Seen], name: str) -> Seen | None:
        """The newest copy of Lease ``name``: the watch's, or the one we last wrote."""
        ours = self._written.get(name)
        seen = listed.get(name)
        found = newest(seen.lease if seen else None, ours[0] if ours else None)
        return Seen.of(found) if found is not None else None

    def due(self, name: str, now: float, every: float) -> bool:
        """Whether our Lease ``name`` was last written ``every`` seconds ago or more."""
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
            written = self.kube.write_lease(self.namespace, body, create=seen is None)
        except KubeError as exc:
            self._written.pop(name, None)
            log.info("lease not written", extra={"lease": name, "error": str(exc)})
            return None
        self._written[name] = (written, started)
        self.observed.wrote(Seen.of(written), started)
        return started
