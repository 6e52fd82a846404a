"""The shape of a strategy's environments: a line by default, a DAG with ``dependsOn``.

Every rule that speaks of "the previous environment" or "every later environment"
asks here instead: ``upstreams_of`` and ``downstream_of``.
"""

from __future__ import annotations

from promoter.engine.snapshot import Snapshot, UpstreamGroup


def upstreams_of(snapshot: Snapshot, index: int) -> tuple[UpstreamGroup, ...]:
    """What environment ``index`` waits for (the one before it, without a DAG)."""
    env = snapshot.environments[index]
    if env.upstreams is not None:
        return env.upstreams
    return (UpstreamGroup(indices=(index - 1,), require=1),) if index > 0 else ()


def downstream_of(snapshot: Snapshot, index: int) -> tuple[int, ...]:
    """Every environment that waits, directly or not, for environment ``index``."""
    found: set[int] = set()
    frontier = [index]
    while frontier:
        current = frontier.pop()
        for other in range(len(snapshot.environments)):
            if other in found or other == index:
                continue
            if any(current in g.indices for g in upstreams_of(snapshot, other)):
                found.add(other)
                frontier.append(other)
    return tuple(sorted(found))


def and_downstream(snapshot: Snapshot, index: int) -> tuple[int, ...]:
    """Environment ``index`` and every environment downstream of it."""
    return (index, *downstream_of(snapshot, index))


def single_upstream(snapshot: Snapshot, index: int) -> int | None:
    """The one environment ``index`` waits for, when it waits for exactly one."""
    groups = upstreams_of(snapshot, index)
    if len(groups) == 1 and len(groups[0].indices) == 1 and groups[0].require == 1:
        return groups[0].indices[0]
    return None
