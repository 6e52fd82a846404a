"""The shape of a strategy's environments: a line by default, a DAG with ``dependsOn``.

Every rule that speaks of "the previous environment" or "every later environment"
asks here instead: ``upstreams_of`` and ``downstream_of``.
"""

from __future__ import annotations

from promoter.config import PromotionStrategy
from promoter.engine.core.snapshot import Rollout, Snapshot, UpstreamGroup


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


def shape_of(strategy: PromotionStrategy) -> list[tuple[tuple[UpstreamGroup, ...] | None, Rollout]]:
    """Each environment's upstream groups (None: the line default) and rollout settings,
    in the order of ``strategy.environments``."""
    index = {env.branch: i for i, env in enumerate(strategy.environments)}
    graph = strategy.upstreams()
    is_dag = bool(strategy.tiers) or any(e.depends_on is not None for e in strategy.environments)
    blocked_from = None
    if strategy.blocked_changes is not None:
        names = [t.name for t in strategy.tiers]
        blocked_from = names.index(strategy.blocked_changes.from_tier)
    shapes = []
    for env in strategy.environments:
        groups = tuple(
            UpstreamGroup(indices=tuple(index[b] for b in g.branches), require=g.require)
            for g in graph[env.branch]
        )
        tier = strategy.tier_of(env)
        rollout = Rollout()
        if tier is not None:
            position = strategy.tiers.index(tier)
            blocked = blocked_from is not None and position >= blocked_from
            rollout = Rollout(
                tier=tier.name,
                tier_members=tuple(index[b] for b in tier.environments),
                max_parallel=tier.max_parallel,
                notice_lead=tier.notice.lead if tier.notice else None,
                block_trailer=strategy.blocked_changes.trailer
                if blocked and strategy.blocked_changes
                else None,
                block_label=strategy.blocked_changes.label
                if blocked and strategy.blocked_changes
                else None,
            )
        shapes.append((groups if is_dag else None, rollout))
    return shapes
