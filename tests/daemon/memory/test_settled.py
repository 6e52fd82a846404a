"""What a reconcile marks settled in the status cache (``promoter.daemon.memory.settled``).

A merged proposal (nothing to promote, no pull request open) gates nothing, so its
statuses are kept past the TTL however long the environments after it wait; the commit
an environment runs stays unsettled while a later environment waits on its health.
"""

from __future__ import annotations

from promoter.daemon.memory.settled import SettledIndex, settled_environments
from promoter.engine import decide
from promoter.state import PullRequestCache
from promoter.state.statuses import StatusCache
from tests.engine.strategies import Env, build

TTL = 60.0


def observed(*envs: Env) -> tuple[StatusCache, list[float], list[str], list[str]]:
    """Every active and proposed commit of ``envs`` read into a cache, one reconcile
    observed, and the clock moved past the TTL; with the active and proposed SHAs."""
    now = [1000.0]
    cache = StatusCache(ttl=TTL, clock=lambda: now[0])
    snapshot = build(*envs)
    active = [env.active.hydrated_sha for env in snapshot.environments if env.active]
    proposed = [env.proposed.hydrated_sha for env in snapshot.environments if env.proposed]
    for env in snapshot.environments:
        for commit in (env.active, env.proposed):
            assert commit is not None
            cache.store(snapshot.repository, commit.hydrated_sha, commit.statuses)
    index = SettledIndex(cache, PullRequestCache(max_age=TTL, clock=lambda: now[0]))
    index.observe("demo", snapshot, decide(snapshot), notes=(), idle=False)
    now[0] += TTL + 1
    return cache, now, active, proposed


def kept(cache: StatusCache, sha: str) -> bool:
    return cache.get("https://git.example.invalid/demo.git", sha) is not None


def test_a_merged_proposal_is_kept_past_the_ttl_while_the_next_environment_waits() -> None:
    cache, _, active, proposed = observed(
        Env("dev", active=3, proposed=3, active_keys=("health",), healthy=3,
            active_statuses={"health": "success"}),
        Env("staging", active=2, proposed=3, proposed_keys=("ci",), pr="current",
            proposed_statuses={"ci": "pending"}),
    )  # fmt: skip
    assert kept(cache, proposed[0])  # dev's merged proposal
    assert not kept(cache, active[0])  # staging waits on its health: read it again
    assert not kept(cache, proposed[1])  # staging's proposal waits on its CI


def test_a_merged_proposal_is_kept_while_the_environment_is_unhealthy() -> None:
    cache, _, active, proposed = observed(
        Env("dev", active=3, proposed=3, active_keys=("health",), healthy=2,
            active_statuses={"health": "failure"}),
    )  # fmt: skip
    assert kept(cache, proposed[0])
    assert not kept(cache, active[0])


def test_a_proposal_with_something_to_promote_is_not_settled() -> None:
    cache, _, _, proposed = observed(
        Env("dev", active=2, proposed=3, proposed_keys=("ci",), pr="current",
            proposed_statuses={"ci": "success"}),
    )  # fmt: skip
    assert not kept(cache, proposed[0])


def test_a_merged_proposal_whose_pull_request_is_still_open_is_not_settled() -> None:
    snapshot = build(Env("dev", active=2, proposed=2, pr="current"))
    assert snapshot.environments[0].pull_request is not None
    [flags] = settled_environments(snapshot, decide(snapshot))
    assert not flags.proposal  # it is closed first


def test_the_ttl_still_holds_for_what_is_not_settled() -> None:
    cache, now, _, proposed = observed(
        Env("dev", active=2, proposed=3, proposed_keys=("ci",), pr="current"),
    )
    now[0] -= 2  # within the TTL again
    assert kept(cache, proposed[0])
