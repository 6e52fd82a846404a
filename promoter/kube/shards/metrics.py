"""Prometheus figures of a sharded replica, per replica and per shard.

Labelled by ``replica`` as well as by the pod Prometheus scrapes, so that several
replicas in one process (the tests) and a dashboard summing over pods both read right.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from prometheus_client import Counter, Gauge

from promoter.kube.shards.assignment import loads
from promoter.metrics import REGISTRY

MEMBERS = Gauge(
    "promoter_shard_members",
    "Live replicas as this replica last saw them",
    ["replica"],
    registry=REGISTRY,
)
HELD = Gauge(
    "promoter_shard_held",
    "1 for each shard whose Lease this replica holds, 0 for the others with work",
    ["replica", "shard"],
    registry=REGISTRY,
)
SHARD_STRATEGIES = Gauge(
    "promoter_shard_strategies",
    "Strategies in each shard (its weight in the assignment)",
    ["replica", "shard"],
    registry=REGISTRY,
)
OWNED_STRATEGIES = Gauge(
    "promoter_shard_owned_strategies",
    "Strategies in the shards this replica holds",
    ["replica"],
    registry=REGISTRY,
)
BALANCE = Gauge(
    "promoter_shard_balance",
    "Most strategies assigned to one replica over the average, as this replica computes it",
    ["replica"],
    registry=REGISTRY,
)
TRANSITIONS = Counter(
    "promoter_shard_transitions_total",
    "Shard Leases acquired, released (handed over), lost (taken by another replica) and"
    " lapsed (not renewed in time)",
    ["replica", "kind"],
    registry=REGISTRY,
)


def record_round(
    replica: str,
    *,
    members: int,
    weights: Mapping[str, float],
    assigned: Mapping[str, str],
    held: Collection[str],
) -> None:
    """What a round of ``replica`` saw: the members, each shard's weight and holder, the
    assignment's balance."""
    MEMBERS.labels(replica).set(members)
    for shard, weight in weights.items():
        HELD.labels(replica, shard).set(1 if shard in held else 0)
        SHARD_STRATEGIES.labels(replica, shard).set(weight)
    OWNED_STRATEGIES.labels(replica).set(sum(weights.get(s, 0) for s in held))
    per_member = loads(assigned, weights)
    total = sum(per_member.values())
    if members and total:
        average = total / members
        BALANCE.labels(replica).set(max(per_member.values()) / average)


def record_transition(replica: str, kind: str) -> None:
    TRANSITIONS.labels(replica, kind).inc()
