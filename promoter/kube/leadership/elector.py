"""Leader election over a ``coordination.k8s.io/v1`` Lease, in the way of client-go.

Every ``retry_period`` a candidate reads the Lease. The holder renews it; the others
take it over only when it has not changed for ``lease_duration`` (measured on their own
clock since they last saw it change, so clock skew between nodes does not matter).
A leader that has not renewed for ``renew_deadline`` (shorter than the lease duration)
steps down, and ``is_leader()`` turns false at that deadline even if the loop is stuck:
the old leader stops writing before anyone else may start. Writes are optimistic
(resourceVersion), so two candidates never both win one round.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client as k8s

from promoter.kube.client.api import Kube, KubeError

log = logging.getLogger("promoter.kube.leader")


@dataclass(frozen=True)
class LeaseSettings:
    namespace: str
    name: str = "promoter-leader"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < retryPeriod < renewDeadline < leaseDuration")


class LeaderElector:
    """Runs the election loop in a thread; calls ``on_started`` / ``on_stopped`` on changes."""

    def __init__(
        self,
        kube: Kube,
        settings: LeaseSettings,
        identity: str,
        *,
        on_started: Callable[[], None] = lambda: None,
        on_stopped: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.settings = settings
        self.identity = identity
        self.on_started = on_started
        self.on_stopped = on_stopped
        self.clock = clock
        self.transitions = 0
        self.rounds = 0
        """Election rounds run (each a read of the Lease, and a write when due)."""
        self._renewed_at: float | None = None
        self._observed: tuple[str, str, str] | None = None
        self._observed_at = 0.0
        self._leading = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-election", daemon=True)

    def is_leader(self) -> bool:
        """True while this replica holds the Lease and its last renewal is within the deadline."""
        renewed = self._renewed_at
        return (
            self._leading
            and renewed is not None
            and self.clock() - renewed < self.settings.renew_deadline
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self, *, release: bool = True) -> None:
        """Stop the loop; with ``release`` a leader hands the Lease back for a fast failover."""
        self._stop.set()
        self._thread.join(timeout=self.settings.retry_period * 2 + 5)
        if self._leading:
            self._step_down("stopped")
            if release:
                self._release()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._round()
            except Exception:  # never let the loop die: the next round tries again
                log.exception("leader election round failed")
            self.rounds += 1
            if self._leading and not self.is_leader():
                self._step_down("renew deadline passed")
            self._stop.wait(self.settings.retry_period)

    def _round(self) -> None:
        now = self.clock()
        try:
            lease = self.kube.read_lease(self.settings.namespace, self.settings.name)
            if lease is None:
                self._create()
                return
            spec = lease.spec or k8s.V1LeaseSpec()
            seen = (
                spec.holder_identity or "",
                str(spec.renew_time),
                str(lease.metadata.resource_version if lease.metadata else ""),
            )
            if seen != self._observed:
                self._observed, self._observed_at = seen, now
            holder = spec.holder_identity or ""
            if holder == self.identity:
                self._write(lease, spec, renew_only=True)
            elif not holder or now - self._observed_at >= self.settings.lease_duration:
                self._write(lease, spec, renew_only=False)
        except KubeError as exc:
            log.info("lease not acquired or renewed", extra={"error": str(exc)})

    def _spec(self, acquire_time: datetime | None, transitions: int) -> k8s.V1LeaseSpec:
        now = datetime.now(UTC)
        return k8s.V1LeaseSpec(
            holder_identity=self.identity,
            lease_duration_seconds=max(1, math.ceil(self.settings.lease_duration)),
            acquire_time=acquire_time or now,
            renew_time=now,
            lease_transitions=transitions,
        )

    def _create(self) -> None:
        started = self.clock()
        lease = k8s.V1Lease(
            metadata=k8s.V1ObjectMeta(name=self.settings.name, namespace=self.settings.namespace),
            spec=self._spec(None, 0),
        )
        self.kube.create_lease(self.settings.namespace, lease)
        self._renewed(started)

    def _write(self, lease: k8s.V1Lease, spec: k8s.V1LeaseSpec, *, renew_only: bool) -> None:
        started = self.clock()
        transitions = spec.lease_transitions or 0
        if renew_only:
            lease.spec = self._spec(spec.acquire_time, transitions)
        else:
            lease.spec = self._spec(None, transitions + 1)
        self.kube.replace_lease(self.settings.namespace, lease)
        self._renewed(started)

    def _renewed(self, started: float) -> None:
        """Count the renewal from before the call: a slow answer shortens our lead, not theirs."""
        self._renewed_at = started
        if not self._leading:
            self._leading = True
            self.transitions += 1
            log.info("became leader", extra={"identity": self.identity})
            self.on_started()

    def _step_down(self, reason: str) -> None:
        self._leading = False
        self._renewed_at = None
        log.warning("stopped leading", extra={"identity": self.identity, "reason": reason})
        self.on_stopped()

    def _release(self) -> None:
        try:
            lease = self.kube.read_lease(self.settings.namespace, self.settings.name)
            if lease is None or lease.spec is None or lease.spec.holder_identity != self.identity:
                return
            lease.spec.holder_identity = None
            lease.spec.lease_duration_seconds = 1
            self.kube.replace_lease(self.settings.namespace, lease)
        except KubeError as exc:
            log.info("lease not released", extra={"error": str(exc)})
