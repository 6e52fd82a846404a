"""The Leases of a sharded installation: their names, labels, and what each one says.

Every replica holds a *member* Lease ``<group>-member-<identity>`` (it announces the
replica and the address others forward webhooks to); each shard with work has a
*shard* Lease ``<group>-shard-NNN`` held by the replica that works on its repositories.
All carry the label ``promoter.argoproj.io/lease-group: <group>``, so one list call
reads them all, and ``kubectl get leases -l promoter.argoproj.io/lease-group=promoter``
shows who is live (HOLDER of the member Leases) and who holds each shard.

Liveness is judged as client-go judges leader Leases: on the reader's own monotonic
clock, from when it last saw the Lease *change* (holder, renew time or
resourceVersion), never by comparing the writer's wall clock with ours.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from kubernetes import client as k8s

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


@dataclass(frozen=True)
class Seen:
    """One Lease as listed."""

    name: str
    role: str
    holder: str
    address: str
    version: str
    renewed: str
    transitions: int
    lease: k8s.V1Lease

    @classmethod
    def of(cls, lease: k8s.V1Lease) -> Seen:
        meta = lease.metadata or k8s.V1ObjectMeta()
        spec = lease.spec or k8s.V1LeaseSpec()
        return cls(
            name=meta.name or "",
            role=(meta.labels or {}).get(ROLE_LABEL, ""),
            holder=spec.holder_identity or "",
            address=(meta.annotations or {}).get(ADDRESS_ANNOTATION, ""),
            version=str(meta.resource_version or ""),
            renewed=str(spec.renew_time),
            transitions=spec.lease_transitions or 0,
            lease=lease,
        )


class Observed:
    """When each Lease was last seen to change, on this process's clock."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[str, str, str], float]] = {}

    def update(self, leases: dict[str, Seen], now: float) -> None:
        for name, seen in leases.items():
            mark = (seen.holder, seen.renewed, seen.version)
            known = self._seen.get(name)
            if known is None or known[0] != mark:
                self._seen[name] = (mark, now)
        for gone in set(self._seen) - set(leases):
            del self._seen[gone]

    def wrote(self, seen: Seen, now: float) -> None:
        """We wrote this Lease ourselves (its next listing is a change we made)."""
        self._seen[seen.name] = ((seen.holder, seen.renewed, seen.version), now)

    def age(self, name: str, now: float) -> float:
        """Seconds since the Lease last changed (infinite when never seen)."""
        known = self._seen.get(name)
        return math.inf if known is None else now - known[1]


def lease_object(
    *,
    name: str,
    namespace: str,
    group: str,
    role: str,
    holder: str,
    duration: float,
    annotations: dict[str, str],
    base: k8s.V1Lease | None = None,
    owner: k8s.V1OwnerReference | None = None,
) -> k8s.V1Lease:
    """A Lease held by ``holder`` now (``base``: the listed one, whose resourceVersion
    makes the write optimistic; an acquisition counts one more transition)."""
    now = datetime.now(UTC)
    spec = (base.spec if base is not None else None) or k8s.V1LeaseSpec()
    same = spec.holder_identity == holder and bool(holder)
    meta = k8s.V1ObjectMeta(
        name=name,
        namespace=namespace,
        labels={GROUP_LABEL: group, ROLE_LABEL: role},
        annotations=annotations,
        resource_version=base.metadata.resource_version if base and base.metadata else None,
        owner_references=[owner] if owner is not None else None,
    )
    return k8s.V1Lease(
        metadata=meta,
        spec=k8s.V1LeaseSpec(
            holder_identity=holder or None,
            lease_duration_seconds=max(1, math.ceil(duration)),
            acquire_time=(spec.acquire_time if same else now) if holder else None,
            renew_time=now if holder else None,
            lease_transitions=(spec.lease_transitions or 0) + (0 if same or not holder else 1),
        ),
    )
