"""Rule 6, always mergeable: an "ours" merge of the active branch onto -next, on conflict only."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from promoter.engine import (
    EnvState,
    MergeActiveIntoProposed,
    MergePullRequest,
    Snapshot,
    decide,
)
from promoter.engine.core.snapshot import CommitState

from ..strategies import Env, build, snapshots


def with_conflicts(snapshot: Snapshot, flags: list[bool]) -> Snapshot:
    envs = tuple(
        env.model_copy(update={"merge_conflicts": flag})
        for env, flag in zip(snapshot.environments, flags, strict=False)
    )
    return snapshot.model_copy(update={"environments": envs + snapshot.environments[len(envs) :]})


@st.composite
def conflicting_snapshots(draw: st.DrawFn) -> Snapshot:
    snapshot = draw(st.one_of(snapshots(), snapshots(focus=True)))
    flags = draw(st.lists(st.booleans(), min_size=4, max_size=4))
    return with_conflicts(snapshot, flags)


def fixes(snapshot: Snapshot) -> list[MergeActiveIntoProposed]:
    return [a for a in decide(snapshot).actions if isinstance(a, MergeActiveIntoProposed)]


@given(conflicting_snapshots())
def test_the_active_branch_is_merged_into_next_only_when_their_merge_conflicts(
    snapshot: Snapshot,
) -> None:
    for fix in fixes(snapshot):
        assert snapshot.environments[fix.environment].merge_conflicts


@given(conflicting_snapshots())
def test_the_ours_merge_keeps_the_proposed_tree_and_leases_on_the_proposed_tip(
    snapshot: Snapshot,
) -> None:
    for fix in fixes(snapshot):
        env = snapshot.environments[fix.environment]
        assert env.proposed is not None and env.active is not None
        assert fix.tree_sha == env.proposed.tree_sha
        assert fix.proposed_sha == env.proposed.hydrated_sha
        assert fix.active_sha == env.active.hydrated_sha
        assert fix.proposed_branch == env.proposed_branch


@given(conflicting_snapshots())
def test_a_conflicting_promotion_is_never_merged_and_is_read_again_at_once(
    snapshot: Snapshot,
) -> None:
    decision = decide(snapshot)
    fixed = {fix.environment for fix in fixes(snapshot)}
    merged = {a.environment for a in decision.actions if isinstance(a, MergePullRequest)}
    assert not fixed & merged
    if fixed:
        assert decision.requeue_after == 0.0


@given(conflicting_snapshots())
def test_once_merged_in_the_proposed_branch_needs_no_second_ours_merge(
    snapshot: Snapshot,
) -> None:
    envs = list(snapshot.environments)
    for fix in fixes(snapshot):
        env = envs[fix.environment]
        assert env.proposed is not None
        merged = CommitState(
            hydrated_sha="e" * 40, tree_sha=fix.tree_sha, dry_sha=env.proposed.dry_sha
        )
        envs[fix.environment] = env.model_copy(
            update={"proposed": merged, "merge_conflicts": False, "pull_request": None}
        )
    assert fixes(snapshot.model_copy(update={"environments": tuple(envs)})) == []


def test_a_reverted_environment_with_a_new_proposal_gets_its_next_branch_merged_with_ours() -> None:
    snapshot = with_conflicts(
        build(
            Env("dev", active=3, proposed=3),
            Env("staging", active=1, proposed=3, pr="current", proposed_keys=("ci",)),
        ),
        [False, True],
    )
    decision = decide(snapshot)
    [fix] = fixes(snapshot)
    assert fix.environment == 1
    assert fix.active_branch == "environment/staging"
    assert not any(isinstance(a, MergePullRequest) for a in decision.actions)
    verdict = decision.environments[1]
    assert verdict.state is EnvState.BLOCKED
    assert "conflicts with environment/staging" in verdict.reason


def test_a_clean_merge_is_promoted_as_usual() -> None:
    snapshot = build(
        Env("dev", active=3, proposed=3),
        Env("staging", active=1, proposed=3, pr="current"),
    )
    assert fixes(snapshot) == []
    assert any(isinstance(a, MergePullRequest) for a in decide(snapshot).actions)


def test_nothing_is_merged_into_next_when_there_is_nothing_to_promote() -> None:
    snapshot = with_conflicts(build(Env("dev", active=3, proposed=3)), [True])
    assert fixes(snapshot) == []
