"""What a snapshot takes from a strategy's configuration, worked out once per strategy.

An environment's upstreams, rollout settings, auto-revert policy, gate keys and gates
depend on the configuration alone. Every read of the strategy used to work them out
again, and every snapshot kept for the views held copies of its own; here they are
computed the first time a strategy object is read and shared by every later snapshot
of it. A new configuration brings new strategy objects, read afresh. Thread-safe (a
race computes the same values twice).
"""

from __future__ import annotations

from dataclasses import dataclass

from promoter.config import Environment, GateSpec, PromotionStrategy
from promoter.engine import AutoRevertPolicy, Rollout, UpstreamGroup, shape_of


@dataclass(frozen=True, slots=True)
class EnvironmentShape:
    """One environment's configured part of a snapshot."""

    config: Environment
    """The environment as configured (what the reader asks of it besides)."""
    branch: str
    proposed_branch: str
    auto_merge: bool
    active_keys: tuple[str, ...]
    proposed_keys: tuple[str, ...]
    gates: tuple[GateSpec, ...]
    upstreams: tuple[UpstreamGroup, ...] | None
    rollout: Rollout
    auto_revert: AutoRevertPolicy


def environment_shapes(strategy: PromotionStrategy) -> tuple[EnvironmentShape, ...]:
    """Each environment's shape, in the order of ``strategy.environments``."""
    shapes = shape_of(strategy)
    found = []
    for position, env in enumerate(strategy.environments):
        upstreams, rollout = shapes[position]
        gates = tuple(strategy.gates_of(env))
        found.append(
            EnvironmentShape(
                config=env,
                branch=env.branch,
                proposed_branch=strategy.proposed_branch(env),
                auto_merge=env.auto_merge,
                active_keys=(*strategy.active_keys(env), *(g.key for g in gates if g.active)),
                proposed_keys=(
                    *strategy.proposed_keys(env),
                    *(g.key for g in gates if g.http is not None),
                ),
                gates=gates,
                upstreams=upstreams,
                rollout=rollout,
                auto_revert=AutoRevertPolicy(
                    enabled=env.auto_revert.enabled,
                    settle_time=env.auto_revert.settle_time,
                    auto_merge=env.auto_revert.auto_merge,
                ),
            )
        )
    return tuple(found)


class Shapes:
    """``environment_shapes`` by strategy, kept while the strategy object is current."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[PromotionStrategy, tuple[EnvironmentShape, ...]]] = {}

    def of(self, strategy: PromotionStrategy) -> tuple[EnvironmentShape, ...]:
        known = self._known.get(strategy.name)
        if known is not None and known[0] is strategy:
            return known[1]
        shapes = environment_shapes(strategy)
        self._known[strategy.name] = (strategy, shapes)
        return shapes
