"""Rule 4 in a graph: an environment waits for ``require`` of each group of environments
before it, fails when a group can no longer reach its quorum, and says which and why."""

from __future__ import annotations

from promoter.engine.core.snapshot import Snapshot, UpstreamGroup
from promoter.engine.gates.gates import previous_environment
from promoter.models import Phase
from tests.engine.strategies import Env, build, short

UP = ("environment/a", "environment/b", "environment/c")


def after(*upstreams: Env, require: int, proposed: int | None = 3) -> Snapshot:
    """``upstreams`` then prod, which waits for ``require`` of them and proposes ``proposed``."""
    prod = Env("prod", active=1, proposed=proposed)
    snapshot = build(*upstreams, prod)
    group = UpstreamGroup(indices=tuple(range(len(upstreams))), require=require)
    envs = list(snapshot.environments)
    envs[-1] = envs[-1].model_copy(update={"upstreams": (group,)})
    return snapshot.model_copy(update={"environments": tuple(envs)})


def env(name: str, at: int, health: str) -> Env:
    return Env(
        name, active=at, proposed=at, active_keys=("health",), active_statuses={"health": health}
    )


def test_a_quorum_reached_passes_and_says_so() -> None:
    snapshot = after(
        env("a", 3, "success"), env("b", 3, "success"), env("c", 1, "success"), require=2
    )
    verdict = previous_environment(snapshot, 3)
    assert verdict.phase is Phase.SUCCESS
    assert verdict.reason == f"every environment before it runs {short(3)} and is healthy"


def test_a_quorum_not_reached_yet_waits_and_names_the_group_and_the_count() -> None:
    snapshot = after(
        env("a", 3, "success"), env("b", 3, "pending"), env("c", 1, "success"), require=2
    )
    verdict = previous_environment(snapshot, 3)
    assert verdict.phase is Phase.PENDING
    assert verdict.reason == (
        f"waiting for 2 of {', '.join(UP)} to run {short(3)} healthy (1 so far)"
    )
    every = after(env("a", 3, "success"), env("b", 3, "pending"), env("c", 3, "success"), require=3)
    assert previous_environment(every, 3).reason.startswith("waiting for all of ")


def test_a_quorum_out_of_reach_fails_with_the_failures_words() -> None:
    snapshot = after(
        env("a", 3, "success"), env("b", 3, "failure"), env("c", 3, "failure"), require=2
    )
    verdict = previous_environment(snapshot, 3)
    assert verdict.phase is Phase.FAILURE
    first, *failures = verdict.reason.split("; ")
    assert first == f"waiting for 2 of {', '.join(UP)} to run {short(3)} healthy (1 so far)"
    assert len(failures) == 2 and all("health" in f for f in failures)
    one_down = after(
        env("a", 3, "success"), env("b", 3, "failure"), env("c", 3, "pending"), require=2
    )
    assert previous_environment(one_down, 3).phase is Phase.PENDING  # c may still make it


def test_without_a_proposed_commit_there_is_nothing_to_wait_for_yet() -> None:
    snapshot = after(env("a", 3, "success"), env("b", 3, "success"), require=2, proposed=None)
    verdict = previous_environment(snapshot, 2)
    assert (verdict.name, verdict.phase, verdict.reason) == (
        "promoter/previous-environment",
        Phase.PENDING,
        "no proposed commit",
    )
