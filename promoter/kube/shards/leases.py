"""The Leases of a sharded installation: their names, labels, and what each one says.

Every replica holds a *member* Lease ``<group>-member-<identity>`` (it announces the
replica and the address others forward webhooks to); each shard with work has a
*shard* Lease ``<group>-shard-NNN`` held by the replica that works on its repositories.
All carry the label ``promoter.argoproj.io/lease-group: <group>``, so one watch follows
them all, and ``kubectl get leases -l promoter.argoproj.io/lease-group=promoter`` shows
who is live (HOLDER of the member Leases) and who holds each shard.

Liveness is judged as client-go judges leader Leases: on the reader's own monotonic
clock, from when it last saw the Lease *change* (holder, renew time or
resourceVersion), never by comparing the writer's wall clock with ours.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from promoter.kube.client.api import Kube, KubeError, Obj

GROUP_LABEL = "promoter.argoproj.io/lease-group"
ROLE_LABEL = "promoter.argoproj.io/lease-role"
ADDRESS_ANNOTATION = "promoter.argoproj.io/address"
STRATEGIES_ANNOTATION = "promoter.argoproj.io/strategies"
REPOSITORIES_ANNOTATION = "promoter.argoproj.io/repositories"
MEMBER, SHARD = "member", "shard"


def member_lease(group: str, identity: str) -> str:
    return f"{group}-member-{identity}"


def shard_lease(group: str, shard: str) -> str:
    return f"{group}-{shard}"


def selector(group: str) -> str:
    return f"{GROUP_LABEL}={group}"


class Health(Protocol):
    """Told how the API server answers the Lease calls (``outage.Outage``)."""

    def failed(self, exc: KubeError) -> None: ...

    def answered(self) -> None: ...

    def relisted(self) -> None: ...


class LeaseSource:
    """A group's Leases as ``Watcher`` lists and watches them; ``health`` is told how the
    API server answers."""

    def __init__(self, kube: Kube, group: str, health: Health | None = None) -> None:
        self.kube = kube
        self.selector = selector(group)
        self.health = health

    def list(self, plural: str, namespace: str | None) -> Obj:
        assert namespace is not None
        try:
            listed = self.kube.list_leases(namespace, self.selector)
        except KubeError as exc:
            if self.health is not None:
                self.health.failed(exc)
            raise
        if self.health is not None:
            self.health.relisted()
        return listed

    def open_watch(
        self, plural: str, namespace: str | None, resource_version: str, timeout: int
    ) -> Any:
        assert namespace is not None
        try:
            return self.kube.open_lease_watch(namespace, self.selector, resource_version, timeout)
        except KubeError as exc:
            if self.health is not None:
                self.health.failed(exc)
            raise


def _version(obj: Obj) -> int:
    try:
        return int(obj.get("metadata", {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def newest(*leases: Obj | None) -> Obj | None:
    """The latest of several copies of one Lease (the watch's, the one we just wrote)."""
    found = [lease for lease in leases if lease is not None]
    return max(found, key=_version) if found else None


@dataclass(frozen=True)
class Seen:
    """One Lease as listed or watched."""

    name: str
    role: str
    holder: str
    address: str
    version: str
    renewed: str
    lease: Obj

    @classmethod
    def of(cls, lease: Obj) -> Seen:
        meta = lease.get("metadata") or {}
        spec = lease.get("spec") or {}
        return cls(
            name=str(meta.get("name") or ""),
            role=(meta.get("labels") or {}).get(ROLE_LABEL, ""),
            holder=spec.get("holderIdentity") or "",
            address=(meta.get("annotations") or {}).get(ADDRESS_ANNOTATION, ""),
            version=str(meta.get("resourceVersion") or ""),
            renewed=str(spec.get("renewTime")),
            lease=lease,
        )


class Observed:
    """When each Lease was last seen to change, on this process's clock (thread-safe: a
    round's writers tell it of their writes while the round reads it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: dict[str, tuple[tuple[str, str, str], float]] = {}

    def update(self, leases: dict[str, Seen], now: float) -> None:
        with self._lock:
            for name, seen in leases.items():
                mark = (seen.holder, seen.renewed, seen.version)
                known = self._seen.get(name)
                if known is None or known[0] != mark:
                    self._seen[name] = (mark, now)
            for gone in set(self._seen) - set(leases):
                del self._seen[gone]

    def wrote(self, seen: Seen, now: float) -> None:
        """We wrote this Lease ourselves (its next listing is a change we made)."""
        with self._lock:
            self._seen[seen.name] = ((seen.holder, seen.renewed, seen.version), now)

    def renewed_all(self, now: float, *, live_since: float = math.inf) -> None:
        """Count every Lease as changed at ``now`` (the API server came back: nobody could
        renew while it failed, ``promoter.kube.shards.outage``), but those already
        unchanged since before ``live_since``: their holders were gone before it failed,
        and stay gone."""
        with self._lock:
            self._seen = {
                name: (mark, max(at, now) if at >= live_since else at)
                for name, (mark, at) in self._seen.items()
            }

    def next_lapse(self, now: float, duration: float) -> float | None:
        """Seconds until the next held Lease reaches ``duration`` without a change (its
        holder presumed gone), or None when none is on its way there."""
        with self._lock:
            ahead = [at + duration - now for (holder, _, _), at in self._seen.values() if holder]
        return min((wait for wait in ahead if wait > 0), default=None)

    def age(self, name: str, now: float) -> float:
        """Seconds since the Lease last changed (infinite when never seen)."""
        with self._lock:
            known = self._seen.get(name)
        return math.inf if known is None else now - known[1]


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_object(
    *,
    name: str,
    namespace: str,
    group: str,
    role: str,
    holder: str,
    duration: float,
    annotations: dict[str, str],
    base: Obj | None = None,
    owner: Obj | None = None,
) -> Obj:
    """A Lease held by ``holder`` now, as JSON (``base``: the one seen, whose
    resourceVersion makes the write optimistic; an acquisition counts one more transition)."""
    now = _stamp(datetime.now(UTC))
    spec = (base or {}).get("spec") or {}
    same = bool(holder) and spec.get("holderIdentity") == holder
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": {GROUP_LABEL: group, ROLE_LABEL: role},
        "annotations": annotations,
    }
    version = (base or {}).get("metadata", {}).get("resourceVersion")
    if version:
        meta["resourceVersion"] = version
    if owner is not None:
        meta["ownerReferences"] = [owner]
    transitions = int(spec.get("leaseTransitions") or 0) + (0 if same or not holder else 1)
    body: Obj = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "leaseDurationSeconds": max(1, math.ceil(duration)),
            "leaseTransitions": transitions,
        },
    }
    if holder:
        body["spec"].update(
            holderIdentity=holder,
            acquireTime=spec.get("acquireTime") if same else now,
            renewTime=now,
        )
    return body
