"""Which replica owns which shard: rendezvous hashing with bounded loads, from the member set.

A repository belongs to shard ``shard_of(name, count)`` (a hash of its name, so it never
depends on the other repositories). ``assign`` gives every shard with work one member:
shards are placed heaviest first (ties by name: an order that does not depend on the
members), each on the first member in its rendezvous order (the highest
``hash(member, shard)``) whose load stays within ``load_factor`` times the average. A
shard that fits nowhere (only when it alone outweighs the slack) goes to the least
loaded member. So:

* every replica computes the same assignment from the same member set and weights;
* no member carries more than ``max(load_factor x average, average + heaviest shard)``;
* when a member joins, the shards that rank it first move to it, and a few more only
  where a member's load crossed the lower bound; when one leaves, its shards move and
  those the bound pushed along behind them.

Because the assignment is computed, a member also knows ahead of time which shards it
would be given if any one of its peers died (``standby``): it can clone their
repositories at a low priority, so that taking them over starts with a fetch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass

LOAD_FACTOR = 1.25


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


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def shard_of(repository: str, count: int) -> int:
    """The shard of a repository, ``0 <= shard < count``."""
    return _hash(f"repository\0{repository}") % count


def shard_name(shard: int) -> str:
    """How a shard is named in its Lease and in the API (``shard-007``)."""
    return f"shard-{shard:03d}"


def rank(shard: str, members: Collection[str]) -> list[str]:
    """The members in the shard's rendezvous order (the first is its natural owner)."""
    return sorted(members, key=lambda m: (-_hash(f"{shard}\0{m}"), m))


def assign(
    weights: Mapping[str, float],
    members: Collection[str],
    *,
    load_factor: float = LOAD_FACTOR,
) -> dict[str, str]:
    """Each shard of positive weight mapped to one member (empty without members)."""
    live = sorted(set(members))
    work = {shard: w for shard, w in weights.items() if w > 0}
    if not live or not work:
        return {}
    cap = load_factor * sum(work.values()) / len(live)
    load = dict.fromkeys(live, 0.0)
    owner: dict[str, str] = {}
    for shard in sorted(work, key=lambda s: (-work[s], s)):
        weight = work[shard]
        order = rank(shard, live)
        chosen = next((m for m in order if load[m] + weight <= cap), None)
        if chosen is None:
            chosen = min(order, key=lambda m: load[m])
        owner[shard] = chosen
        load[chosen] += weight
    return owner


def standby(
    weights: Mapping[str, float],
    members: Collection[str],
    identity: str,
    *,
    load_factor: float = LOAD_FACTOR,
) -> set[str]:
    """The shards ``identity`` is not assigned now and would be if any one of the other
    ``members`` left (one assignment per peer: ``members`` times the cost of one)."""
    live = set(members) | {identity}
    now = {s for s, m in assign(weights, live, load_factor=load_factor).items() if m == identity}
    found: set[str] = set()
    for peer in sorted(live - {identity}):
        without = assign(weights, live - {peer}, load_factor=load_factor)
        found |= {s for s, m in without.items() if m == identity}
    return found - now


def loads(owner: Mapping[str, str], weights: Mapping[str, float]) -> dict[str, float]:
    """Each member's total weight under an assignment."""
    found: dict[str, float] = {}
    for shard, member in owner.items():
        found[member] = found.get(member, 0.0) + weights.get(shard, 0.0)
    return found
