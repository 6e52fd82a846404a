"""The built-in gates the engine judges: soak, windows, approvals, commit messages."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from promoter.config import GateSpec
from promoter.engine import (
    Approvals,
    AuthorsRead,
    EnvState,
    MergePullRequest,
    ReviewsRead,
    SetCommitStatus,
    decide,
)
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord
from promoter.engine.core.snapshot import Snapshot
from promoter.models import DryCommit, Phase, Review
from tests.engine.strategies import NOW, dev_then_prod, dry, hydrated

GREEN = {"ci": "success"}


def gate(**spec: Any) -> GateSpec:
    return GateSpec.model_validate(spec)


def with_env(snapshot: Snapshot, index: int, **changes: Any) -> Snapshot:
    envs = list(snapshot.environments)
    assert set(changes) <= set(type(envs[index]).model_fields), "not a field of the snapshot"
    envs[index] = envs[index].model_copy(update=changes)
    return snapshot.model_copy(update={"environments": tuple(envs)})


def healthy_since(snapshot: Snapshot, index: int, since: Any) -> Snapshot:
    record = HealthyRecord(
        dry_sha=dry(3), hydrated_sha=hydrated("environment/dev", 3), healthy_since=since
    )
    return with_env(snapshot, index, ledger=EnvLedger(healthy=(record,)))


def verdict(snapshot: Snapshot, index: int, key: str) -> Any:
    gates = decide(snapshot).environments[index].gates
    return next(g for g in gates if g.name == key)


def merges(snapshot: Snapshot) -> list[MergePullRequest]:
    return [a for a in decide(snapshot).actions if isinstance(a, MergePullRequest)]


# --- soak ------------------------------------------------------------------------------


def test_a_soak_waits_until_the_previous_environment_ran_the_change_long_enough() -> None:
    soak = gate(soak={"duration": "30m"})
    snapshot = with_env(
        healthy_since(dev_then_prod(), 0, NOW - timedelta(minutes=10)), 1, gates=(soak,)
    )
    decision = decide(snapshot)
    found = verdict(snapshot, 1, "promoter/soak")
    assert found.phase is Phase.PENDING
    assert found.changes_at == NOW + timedelta(minutes=20)
    assert "passes at" in found.reason
    assert merges(snapshot) == []
    assert decision.requeue_after == 20 * 60
    published = [a for a in decision.actions if isinstance(a, SetCommitStatus)]
    assert any(
        a.status.key == "promoter/soak" and a.status.phase is Phase.PENDING for a in published
    )


def test_a_soak_that_has_run_its_time_lets_the_change_merge() -> None:
    soak = gate(soak={"duration": "30m"})
    snapshot = with_env(
        healthy_since(dev_then_prod(), 0, NOW - timedelta(minutes=31)), 1, gates=(soak,)
    )
    assert verdict(snapshot, 1, "promoter/soak").phase is Phase.SUCCESS
    assert len(merges(snapshot)) == 1


def test_a_soak_with_no_healthy_record_waits_with_a_reason() -> None:
    snapshot = with_env(dev_then_prod(), 1, gates=(gate(soak={"duration": "5m"}),))
    found = verdict(snapshot, 1, "promoter/soak")
    assert found.phase is Phase.PENDING
    assert "waiting for environment/dev to run" in found.reason


@given(
    healthy_for=st.integers(min_value=0, max_value=7200),
    duration=st.integers(min_value=1, max_value=7200),
)
def test_a_soak_never_passes_early(healthy_for: int, duration: int) -> None:
    soak = gate(soak={"duration": duration})
    since = NOW - timedelta(seconds=healthy_for)
    snapshot = with_env(healthy_since(dev_then_prod(), 0, since), 1, gates=(soak,))
    found = verdict(snapshot, 1, "promoter/soak")
    assert (found.phase is Phase.SUCCESS) == (healthy_for >= duration)
    assert bool(merges(snapshot)) == (healthy_for >= duration)


# --- windows ---------------------------------------------------------------------------


def test_a_closed_window_holds_the_merge_and_wakes_the_strategy_when_it_opens() -> None:
    # NOW is Wed 2024-05-01 12:00 UTC; the window opens at 13:00 UTC.
    window = gate(window={"allow": [{"cron": "0 13 * * *", "duration": "1h"}]})
    snapshot = with_env(dev_then_prod(), 1, gates=(window,))
    decision = decide(snapshot)
    assert merges(snapshot) == []
    assert decision.environments[1].state is EnvState.BLOCKED
    assert "window opens Wed 13:00 UTC" in decision.environments[1].reason
    assert decision.requeue_after == 3600


@given(
    hour=st.integers(min_value=0, max_value=23),
    length=st.integers(min_value=1, max_value=600),
    deny=st.booleans(),
)
def test_a_closed_window_never_merges(hour: int, length: int, deny: bool) -> None:
    windows: dict[str, Any] = {"allow": [{"cron": f"0 {hour} * * *", "duration": length * 60}]}
    if deny:
        windows = {"deny": [{"cron": f"0 {hour} * * *", "duration": length * 60}]}
    snapshot = with_env(dev_then_prod(), 1, gates=(gate(window=windows),))
    is_open = verdict(snapshot, 1, "promoter/window").phase is Phase.SUCCESS
    assert bool(merges(snapshot)) == is_open


# --- approvals -------------------------------------------------------------------------


def approved(snapshot: Snapshot, *reviews: Review, **spec: Any) -> Snapshot:
    read = Approvals(reviews=ReviewsRead(value=reviews), change_authors=AuthorsRead(value=()))
    return with_env(snapshot, 1, gates=(gate(approval=spec),), approvals=read)


def test_an_approval_gate_waits_for_enough_distinct_approvers() -> None:
    one = Review(user="ada", approved=True)
    snapshot = approved(dev_then_prod(), one, one, count=2)
    found = verdict(snapshot, 1, "promoter/approval")
    assert found.phase is Phase.PENDING
    assert "waiting for 2 approvals (1 so far)" in found.reason
    assert merges(snapshot) == []
    two = approved(dev_then_prod(), one, Review(user="grace", approved=True), count=2)
    assert verdict(two, 1, "promoter/approval").phase is Phase.SUCCESS
    assert len(merges(two)) == 1


def test_only_named_users_or_team_members_count() -> None:
    outsider = Review(user="mallory", approved=True)
    member = Review(user="grace", approved=True, teams=("acme/sre",))
    assert (
        verdict(approved(dev_then_prod(), outsider, users=["ada"]), 1, "promoter/approval").phase
        is Phase.PENDING
    )
    assert (
        verdict(approved(dev_then_prod(), member, teams=["acme/sre"]), 1, "promoter/approval").phase
        is Phase.SUCCESS
    )
    assert (
        verdict(
            approved(dev_then_prod(), outsider, teams=["acme/sre"]), 1, "promoter/approval"
        ).phase
        is Phase.PENDING
    )


def test_a_later_request_for_changes_withdraws_an_approval() -> None:
    snapshot = approved(
        dev_then_prod(), Review(user="ada", approved=True), Review(user="ada", approved=False)
    )
    assert verdict(snapshot, 1, "promoter/approval").phase is Phase.PENDING


def test_with_reset_on_push_an_approval_of_an_older_head_does_not_count() -> None:
    old = Review(user="ada", approved=True, commit_sha="0" * 40)
    snapshot = approved(dev_then_prod(), old, reset_on_push=True)
    assert verdict(snapshot, 1, "promoter/approval").phase is Phase.PENDING
    head = snapshot.environments[1].pull_request
    assert head is not None
    current = Review(user="ada", approved=True, commit_sha=head.head_sha)
    assert (
        verdict(
            approved(dev_then_prod(), current, reset_on_push=True), 1, "promoter/approval"
        ).phase
        is Phase.SUCCESS
    )


def test_the_approving_label_approves_by_itself() -> None:
    snapshot = approved(dev_then_prod(), label="lgtm")
    pr = snapshot.environments[1].pull_request
    assert pr is not None
    labelled = with_env(snapshot, 1, pull_request=pr.model_copy(update={"labels": ("lgtm",)}))
    assert verdict(labelled, 1, "promoter/approval").reason == "approved by label lgtm"


def test_an_scm_that_cannot_read_reviews_says_so() -> None:
    snapshot = with_env(
        dev_then_prod(),
        1,
        gates=(gate(approval={}),),
        approvals=Approvals(reviews=ReviewsRead(reason="approval: no reviews here")),
    )
    assert verdict(snapshot, 1, "promoter/approval").reason == "approval: no reviews here"


# --- commit messages -------------------------------------------------------------------


def with_messages(spec: dict[str, Any], *bodies: str) -> Snapshot:
    changelog = tuple(
        DryCommit(sha=dry(3 - i), subject=f"change {i}", author="ada", body=body)
        for i, body in enumerate(bodies)
    )
    return with_env(dev_then_prod(), 1, gates=(gate(commitMessage=spec),), changelog=changelog)


def test_a_blocking_trailer_on_any_promoted_commit_fails_the_gate() -> None:
    snapshot = with_messages(
        {"blockTrailers": ["Promote-Block"]},
        "Bump\n\nPromote-Block: breaking change, migrate values first",
        "Fix typo",
    )
    found = verdict(snapshot, 1, "promoter/commit-message")
    assert found.phase is Phase.FAILURE
    assert "has Promote-Block" in found.reason
    assert merges(snapshot) == []


def test_a_blocking_trailer_set_to_false_does_not_block() -> None:
    snapshot = with_messages({"blockTrailers": ["Promote-Block"]}, "Bump\n\nPromote-Block: false")
    assert verdict(snapshot, 1, "promoter/commit-message").phase is Phase.SUCCESS


def test_a_required_trailer_missing_on_one_commit_fails_the_gate() -> None:
    snapshot = with_messages(
        {"requireTrailers": ["Reviewed-by"]},
        "Bump\n\nReviewed-by: Grace <g@example.org>",
        "Unreviewed",
    )
    found = verdict(snapshot, 1, "promoter/commit-message")
    assert found.phase is Phase.FAILURE
    assert "lacks Reviewed-by" in found.reason


def test_a_jmespath_rule_sees_subject_author_and_trailers() -> None:
    spec = {"blockIf": "contains(subject, 'WIP') || trailers.\"Risk\" == 'high'"}
    assert verdict(with_messages(spec, "fine"), 1, "promoter/commit-message").phase is Phase.SUCCESS
    risky = with_messages(spec, "Change\n\nRisk: high")
    assert verdict(risky, 1, "promoter/commit-message").phase is Phase.FAILURE
