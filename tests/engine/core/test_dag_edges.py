"""The DAG at its edges: a quorum of one among several upstreams is met by any of them (not
only the first), and the environments downstream of one are found by visiting each once,
so that a deep graph of tiers is answered at once.
"""

from __future__ import annotations

from promoter.engine.core.dag import downstream_of, single_upstream
from promoter.engine.core.snapshot import Snapshot, UpstreamGroup
from promoter.engine.gates.gates import previous_environment
from promoter.models import Phase
from tests.engine.gates.test_quorum import after, env
from tests.engine.strategies import Env, build, short


def test_a_quorum_of_one_is_met_by_an_upstream_that_is_not_the_first() -> None:
    snapshot = after(env("a", 1, "success"), env("b", 3, "success"), require=1)
    assert single_upstream(snapshot, 2) is None
    verdict = previous_environment(snapshot, 2)
    assert (verdict.phase, verdict.reason) == (
        Phase.SUCCESS,
        f"every environment before it runs {short(3)} and is healthy",
    )


def ladder(tiers: int) -> Snapshot:
    """``tiers`` tiers of two environments, each waiting for both of the tier before it."""
    snapshot = build(*(Env(f"t{t}-{side}") for t in range(tiers) for side in "ab"))
    envs = [
        e.model_copy(
            update={
                "upstreams": (UpstreamGroup(indices=(i - 2 - i % 2, i - 1 - i % 2), require=2),)
            }
        )
        if i >= 2
        else e.model_copy(update={"upstreams": ()})
        for i, e in enumerate(snapshot.environments)
    ]
    return snapshot.model_copy(update={"environments": tuple(envs)})


def test_everything_below_the_first_tier_of_a_deep_graph_is_downstream_of_it() -> None:
    # 40 tiers: 2**39 paths lead from the first environment to the last, but only 78
    # environments; each is visited once.
    snapshot = ladder(40)
    assert downstream_of(snapshot, 0) == tuple(range(2, 80))
    assert downstream_of(snapshot, 1) == tuple(range(2, 80))
    assert downstream_of(snapshot, 77) == (78, 79)
    assert downstream_of(snapshot, 79) == ()
