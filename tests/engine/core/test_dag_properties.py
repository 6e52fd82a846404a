"""The DAG rules over random graphs and histories: never backwards along any path, no
environment gets a change its upstreams have not run healthy, tiers' limits hold, pins hold."""

from __future__ import annotations

import itertools
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from promoter.engine import MergePullRequest, decide
from promoter.engine.core.dag import and_downstream
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord, Pin
from promoter.engine.core.snapshot import (
    CommitState,
    EnvironmentSnapshot,
    Rollout,
    Snapshot,
    UpstreamGroup,
)
from promoter.engine.gates.rollout import in_flight
from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState
from tests.engine.strategies import NOW, dry, hydrated

HISTORY = 6


@st.composite
def dags(draw: st.DrawFn) -> Snapshot:
    count = draw(st.integers(min_value=2, max_value=7))
    tiers = draw(st.booleans())
    environments = []
    tier_of: list[int] = []
    if tiers:  # consecutive slices of the environments are tiers
        cuts = sorted(draw(st.sets(st.integers(1, count - 1), max_size=3)))
        bounds = [0, *cuts, count]
        for t, (a, b) in enumerate(itertools.pairwise(bounds)):
            tier_of += [t] * (b - a)
    limits = {t: draw(st.none() | st.integers(1, 2)) for t in set(tier_of)}
    for index in range(count):
        name = f"environment/e{index}"
        if tiers:
            members = tuple(i for i in range(count) if tier_of[i] == tier_of[index] - 1)
            groups = (
                (UpstreamGroup(indices=members, require=draw(st.integers(1, len(members)))),)
                if members
                else ()
            )
            same = tuple(i for i in range(count) if tier_of[i] == tier_of[index])
            rollout = Rollout(
                tier=f"t{tier_of[index]}",
                tier_members=same,
                max_parallel=limits[tier_of[index]],
            )
        else:
            earlier = list(range(index))
            chosen = draw(st.sets(st.sampled_from(earlier), max_size=3)) if earlier else set()
            groups = (
                (UpstreamGroup(indices=tuple(sorted(chosen)), require=len(chosen)),)
                if chosen
                else ()
            )
            rollout = Rollout()
        active = draw(st.integers(0, HISTORY - 1))
        proposed = draw(st.integers(0, HISTORY - 1))
        healthy_on_active = draw(st.booleans())
        active_state = CommitState(
            hydrated_sha=hydrated(name, active),
            tree_sha=f"tree-{name}-{active}",
            dry_sha=dry(active),
            statuses=(
                CommitStatus(
                    key="health",
                    phase=Phase.SUCCESS if healthy_on_active else Phase.PENDING,
                    updated_at=NOW - timedelta(hours=1),
                ),
            ),
        )
        proposed_state = CommitState(
            hydrated_sha=hydrated(f"{name}-next", proposed),
            tree_sha=f"tree-{name}-next-{proposed}",
            dry_sha=dry(proposed),
            statuses=(CommitStatus(key="ci", phase=Phase.SUCCESS, updated_at=NOW),),
        )
        if healthy_on_active:  # recorded healthy on what it runs
            recorded = active
        elif draw(st.booleans()):  # promoted since it was last healthy: in flight
            recorded = max(active - 1, 0)
        else:
            recorded = None
        healthy = (
            (
                HealthyRecord(
                    dry_sha=dry(recorded),
                    hydrated_sha=hydrated(name, recorded)
                    if recorded != active
                    else active_state.hydrated_sha,
                    healthy_since=NOW - timedelta(hours=1),
                ),
            )
            if recorded is not None
            else ()
        )
        if recorded is not None and recorded == active and not healthy_on_active:
            healthy = (healthy[0].model_copy(update={"hydrated_sha": "0" * 40}),)
        pin = None
        if draw(st.integers(0, 4)) == 0:
            pin = Pin(dry_sha=dry(draw(st.integers(0, HISTORY - 1))), reason="freeze", since=NOW)
        pr = PullRequest(
            id=f"pr-{index}",
            number=index + 1,
            head_branch=f"{name}-next",
            base_branch=name,
            head_sha=proposed_state.hydrated_sha,
            state=PullRequestState.OPEN,
        )
        environments.append(
            EnvironmentSnapshot(
                branch=name,
                proposed_branch=f"{name}-next",
                auto_merge=True,
                active_keys=("health",),
                proposed_keys=("ci",),
                active=active_state,
                proposed=proposed_state,
                pull_request=pr,
                ledger=EnvLedger(healthy=healthy, pin=pin),
                upstreams=groups,
                rollout=rollout,
            )
        )
    ancestry = frozenset((dry(i), dry(j)) for i in range(HISTORY) for j in range(i + 1, HISTORY))
    return Snapshot(
        strategy="dag",
        repository="repo",
        dry_branch="main",
        environments=tuple(environments),
        ancestry=ancestry,
        now=NOW,
    )


def merges(snapshot: Snapshot) -> list[MergePullRequest]:
    return [
        a
        for a in decide(snapshot).actions
        if isinstance(a, MergePullRequest) and a.purpose == "promotion"
    ]


@settings(max_examples=300, deadline=None)
@given(dags())
def test_a_merge_never_moves_any_environment_downstream_backwards(snapshot: Snapshot) -> None:
    for merge in merges(snapshot):
        for position in and_downstream(snapshot, merge.environment):
            active = snapshot.environments[position].active
            assert active is not None and active.dry_sha is not None
            assert snapshot.descends(merge.dry_sha, active.dry_sha)


@settings(max_examples=300, deadline=None)
@given(dags())
def test_no_environment_gets_a_change_its_upstreams_have_not_run_healthy(
    snapshot: Snapshot,
) -> None:
    for merge in merges(snapshot):
        for group in snapshot.environments[merge.environment].upstreams or ():
            ready = 0
            for u in group.indices:
                up = snapshot.environments[u]
                assert up.active is not None and up.active.dry_sha is not None
                status = up.active.status("health")
                healthy = status is not None and status.phase is Phase.SUCCESS
                if snapshot.descends(up.active.dry_sha, merge.dry_sha) and healthy:
                    ready += 1
            assert ready >= group.require


@settings(max_examples=300, deadline=None)
@given(dags())
def test_a_tier_never_promotes_more_than_its_max_parallel_at_once(snapshot: Snapshot) -> None:
    """Promotions at once: members promoted but not yet healthy, and those merging now."""
    merged = {m.environment for m in merges(snapshot)}
    for tier in {e.rollout.tier for e in snapshot.environments if e.rollout.max_parallel}:
        members = {i for i, e in enumerate(snapshot.environments) if e.rollout.tier == tier}
        limit = snapshot.environments[min(members)].rollout.max_parallel
        assert limit is not None
        if not members & merged:
            continue
        flying = {m for m in members if in_flight(snapshot, m)}
        assert len(flying | (members & merged)) <= max(limit, len(flying))


@settings(max_examples=300, deadline=None)
@given(dags())
def test_a_pin_is_never_overtaken(snapshot: Snapshot) -> None:
    for merge in merges(snapshot):
        pin = snapshot.environments[merge.environment].ledger.pin
        assert pin is None or pin.dry_sha == merge.dry_sha
