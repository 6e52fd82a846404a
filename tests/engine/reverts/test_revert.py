"""Rule 8 and holds: automatic reverts, holds, pauses; examples and properties."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import Phase as Search
from hypothesis import find, given, settings
from hypothesis import strategies as st

from promoter.engine import decide
from promoter.engine.core.actions import (
    GATES_KEY,
    HOLD_KEY,
    EnvState,
    MergePullRequest,
    OpenRevert,
    PauseEnvironment,
    ReleaseHold,
    SetCommitStatus,
)
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord, Hold, Revert
from promoter.engine.core.snapshot import AutoRevertPolicy, Snapshot
from promoter.engine.reverts.revert import manual_revert
from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState

from ..strategies import NOW, Env, build, dry, hydrated

SETTLE = 120.0


def healthy(branch: str, *positions: int) -> tuple[HealthyRecord, ...]:
    return tuple(
        HealthyRecord(
            dry_sha=dry(p), hydrated_sha=hydrated(branch, p), healthy_since=NOW - timedelta(hours=1)
        )
        for p in positions
    )


def hold(position: int) -> Hold:
    return Hold(dry_sha=dry(position), reason="bad", since=NOW, source="revert")


def revert_of(branch: str, bad: int, restored: int, *, auto_merge: bool = True) -> Revert:
    return Revert(
        bad_dry_sha=dry(bad),
        bad_hydrated_sha=hydrated(branch, bad),
        restored_dry_sha=dry(restored),
        restored_hydrated_sha=hydrated(branch, restored),
        reason="health failed",
        trigger="auto",
        opened_at=NOW,
        branch=f"{branch}-revert-x",
        revert_sha="f" * 40,
        pr=99,
        auto_merge=auto_merge,
    )


def edit(snapshot: Snapshot, index: int, **updates: Any) -> Snapshot:
    envs = list(snapshot.environments)
    assert set(updates) <= set(type(envs[index]).model_fields), "not a field of the snapshot"
    envs[index] = envs[index].model_copy(update=updates)
    return snapshot.model_copy(update={"environments": tuple(envs)})


def failing(snapshot: Snapshot, index: int, *, ago: float, active_age: float = 600.0) -> Snapshot:
    """Environment ``index``'s health gate failed ``ago`` seconds ago, active for ``active_age``."""
    env = snapshot.environments[index]
    assert env.active is not None
    bad = CommitStatus(key="health", phase=Phase.FAILURE, updated_at=NOW - timedelta(seconds=ago))
    active = env.active.model_copy(update={"statuses": (bad,)})
    return edit(
        snapshot,
        index,
        active=active,
        active_since=NOW - timedelta(seconds=active_age),
        auto_revert=AutoRevertPolicy(enabled=True, settle_time=SETTLE, auto_merge=True),
    )


def staging(**ledger: Any) -> Snapshot:
    """dev and staging on 5 (staging healthy before on 3), staging's health gate set."""
    snapshot = build(
        Env("dev", active=5, proposed=5),
        Env("staging", active=5, proposed=5, active_keys=("health",)),
    )
    records = ledger.pop("healthy", healthy("environment/staging", 3))
    return edit(snapshot, 1, ledger=EnvLedger(healthy=records, **ledger))


def kinds(snapshot: Snapshot, cls: type) -> list[Any]:
    return [a for a in decide(snapshot).actions if isinstance(a, cls)]


def test_a_failure_that_lasts_past_the_settle_time_opens_a_revert_to_the_last_healthy() -> None:
    snapshot = failing(staging(), 1, ago=SETTLE + 1)
    [revert] = kinds(snapshot, OpenRevert)
    assert revert.restore.dry_sha == dry(3)
    assert revert.bad_dry_sha == dry(5)
    assert revert.auto_merge
    assert "health failed" in revert.reason
    assert decide(snapshot).environments[1].state is EnvState.REVERTING


def test_a_revert_restores_the_newest_healthy_ancestor_not_an_older_one() -> None:
    snapshot = failing(staging(healthy=healthy("environment/staging", 2, 3, 4)), 1, ago=SETTLE + 1)
    [revert] = kinds(snapshot, OpenRevert)
    assert revert.restore.dry_sha == dry(4)
    assert decide(snapshot).environments[1].reason == (
        f"health failed on {dry(5)[:7]}; reverting to {dry(4)[:7]}"
    )


def test_a_revert_skips_the_failing_commit_and_records_that_are_not_its_ancestors() -> None:
    records = healthy("environment/staging", 3, 7, 5)  # 7: a later change, since reverted
    snapshot = failing(staging(healthy=records), 1, ago=SETTLE + 1)
    [revert] = kinds(snapshot, OpenRevert)
    assert revert.restore.dry_sha == dry(3)


def test_no_revert_before_the_settle_time_but_a_wake_up_when_it_ends() -> None:
    snapshot = failing(staging(), 1, ago=30)
    assert kinds(snapshot, OpenRevert) == []
    assert decide(snapshot).requeue_after == SETTLE - 30


def test_a_failure_reported_before_the_commit_became_active_is_ignored() -> None:
    snapshot = failing(staging(), 1, ago=SETTLE + 100, active_age=SETTLE)
    assert kinds(snapshot, OpenRevert) == []


def test_without_an_older_healthy_commit_there_is_nothing_to_revert_to() -> None:
    snapshot = failing(staging(healthy=healthy("environment/staging", 5)), 1, ago=SETTLE + 1)
    assert kinds(snapshot, OpenRevert) == []


def test_a_failure_after_a_revert_pauses_the_environment_instead_of_reverting_it() -> None:
    snapshot = failing(
        staging(reverts=(revert_of("environment/staging", 7, 5),)), 1, ago=SETTLE + 1
    )
    assert kinds(snapshot, OpenRevert) == []
    [pause] = kinds(snapshot, PauseEnvironment)
    assert "never reverted automatically" in pause.reason


def test_a_paused_environment_is_not_promoted_and_says_why() -> None:
    snapshot = build(
        Env("dev", active=6, proposed=6),
        Env("staging", active=5, proposed=6, pr="current"),
    )
    snapshot = edit(snapshot, 1, ledger=EnvLedger(paused="health failed after a revert"))
    assert kinds(snapshot, MergePullRequest) == []
    verdict = decide(snapshot).environments[1]
    assert verdict.state is EnvState.BLOCKED
    assert "paused: health failed after a revert" in verdict.reason


def test_a_pause_shows_in_the_summary_check_until_it_is_lifted() -> None:
    snapshot = build(
        Env("dev", active=6, proposed=6),
        Env("staging", active=5, proposed=6, pr="current"),
    )
    paused = edit(snapshot, 1, ledger=EnvLedger(paused="health failed after a revert"))
    [check] = [s for s in kinds(paused, SetCommitStatus) if s.status.key == GATES_KEY]
    assert check.status.phase is Phase.FAILURE
    assert check.status.description == (
        "failed: auto-promotion of environment/staging is paused: health failed after a revert"
    )

    env = paused.environments[1]
    assert env.proposed is not None
    shown = env.proposed.model_copy(update={"statuses": (check.status,)})
    released = edit(paused, 1, ledger=EnvLedger(), proposed=shown)
    [check] = [s for s in kinds(released, SetCommitStatus) if s.status.key == GATES_KEY]
    assert check.status.phase is Phase.SUCCESS
    assert len(kinds(released, MergePullRequest)) == 1


def test_a_held_dry_sha_is_not_merged_and_the_hold_shows_as_a_failing_check() -> None:
    snapshot = build(Env("dev", active=6, proposed=6), Env("staging", 5, 6, pr="current"))
    snapshot = edit(snapshot, 1, ledger=EnvLedger(holds=(hold(6),)))
    assert kinds(snapshot, MergePullRequest) == []
    [check] = [s for s in kinds(snapshot, SetCommitStatus) if s.status.key == HOLD_KEY]
    assert check.status.phase is Phase.FAILURE


def test_a_descendant_of_a_held_sha_lifts_the_hold() -> None:
    snapshot = build(Env("dev", active=7, proposed=7), Env("staging", 5, 7, pr="current"))
    snapshot = edit(snapshot, 1, ledger=EnvLedger(holds=(hold(6),)))
    [release] = kinds(snapshot, ReleaseHold)
    assert release.dry_sha == dry(6)


def test_an_open_revert_pr_with_auto_merge_is_merged_on_its_own_head_only() -> None:
    record = revert_of("environment/staging", 5, 3)
    pr = PullRequest(
        id="99",
        number=99,
        head_branch=record.branch,
        base_branch="environment/staging",
        head_sha=record.revert_sha,
        state=PullRequestState.OPEN,
    )
    snapshot = edit(staging(reverts=(record,)), 1, revert_pull_request=pr)
    [merge] = kinds(snapshot, MergePullRequest)
    assert (merge.purpose, merge.expected_head_sha) == ("revert", record.revert_sha)
    moved = edit(snapshot, 1, revert_pull_request=pr.model_copy(update={"head_sha": "e" * 40}))
    assert kinds(moved, MergePullRequest) == []


def test_a_manual_revert_names_a_healthy_commit_or_says_why_not() -> None:
    snapshot = staging()
    action = manual_revert(snapshot, 1, to=dry(3)[:8], auto_merge=False)
    assert isinstance(action, OpenRevert) and action.restore.dry_sha == dry(3)
    assert manual_revert(snapshot, 1, to=dry(4), auto_merge=False) == (
        f"the ledger of environment/staging holds no {dry(4)} as a healthy commit"
    )


def test_a_manual_revert_without_a_target_restores_the_newest_older_healthy_commit() -> None:
    snapshot = build(
        Env("dev", active=5, proposed=5),
        Env("staging", active=5, proposed=5),
        Env("prod", active=5, proposed=5),
    )
    snapshot = edit(snapshot, 1, ledger=EnvLedger(healthy=healthy("environment/staging", 2, 3)))
    action = manual_revert(snapshot, 1, to=None, auto_merge=True)
    assert isinstance(action, OpenRevert)
    assert (action.restore.dry_sha, action.bad_dry_sha) == (dry(3), dry(5))
    assert action.hold_in == (1, 2)  # staging and every environment after it
    assert (action.trigger, action.auto_merge) == ("manual", True)
    assert action.reason == f"a person asked to revert environment/staging to {dry(3)[:7]}"


def test_a_manual_revert_says_why_it_cannot_be_done() -> None:
    snapshot = staging(healthy=healthy("environment/staging", 5))
    assert manual_revert(snapshot, 1, to=None, auto_merge=False) == (
        "the ledger of environment/staging holds no older healthy commit"
    )
    assert manual_revert(snapshot, 1, to=dry(5)[:7], auto_merge=False) == (
        f"environment/staging already runs {dry(5)[:7]}"
    )
    unreadable = edit(staging(), 1, error="the SCM answered 502")
    assert manual_revert(unreadable, 1, to=None, auto_merge=False) == "the SCM answered 502"


# --- properties --------------------------------------------------------------------------


@st.composite
def revert_scenarios(draw: st.DrawFn) -> Snapshot:
    active = draw(st.integers(1, 8))
    proposed = draw(st.integers(active, 9))
    branch = "environment/staging"
    snapshot = build(
        Env("dev", active=proposed, proposed=proposed),
        Env(
            "staging",
            active=active,
            proposed=proposed,
            active_keys=("health",),
            pr=draw(st.sampled_from(["none", "current"])),
        ),
    )
    positions = draw(st.lists(st.integers(0, 9), min_size=1, max_size=5))
    holds = draw(st.lists(st.integers(0, 9), max_size=3, unique=True))
    reverts = ()
    if draw(st.booleans()):
        restored = draw(st.sampled_from([active, draw(st.integers(0, 9))]))
        reverts = (revert_of(branch, draw(st.integers(0, 9)), restored),)
    ledger = EnvLedger(
        healthy=healthy(branch, *positions),
        holds=tuple(hold(p) for p in holds),
        reverts=reverts,
        paused=draw(st.sampled_from([None, None, None, "paused by a test"])),
    )
    snapshot = edit(snapshot, 1, ledger=ledger)
    if draw(st.integers(0, 3)) > 0:
        ages = st.sampled_from([0.0, 30.0, SETTLE - 1, SETTLE, SETTLE + 1, 300.0, 900.0])
        snapshot = failing(snapshot, 1, ago=draw(ages), active_age=draw(ages))
    return snapshot


@given(revert_scenarios())
def test_a_revert_happens_only_on_a_settled_fresh_failure_and_restores_a_healthy_record(
    snapshot: Snapshot,
) -> None:
    env = snapshot.environments[1]
    assert env.active is not None and env.active.dry_sha is not None
    for revert in kinds(snapshot, OpenRevert):
        failure = env.active.status("health")
        assert failure is not None and failure.phase is Phase.FAILURE
        assert env.active_since is None or failure.updated_at >= env.active_since
        assert (snapshot.now - failure.updated_at).total_seconds() >= env.auto_revert.settle_time
        assert revert.restore in env.ledger.healthy
        assert revert.restore.dry_sha != env.active.dry_sha
        assert snapshot.descends(env.active.dry_sha, revert.restore.dry_sha)
        assert env.ledger.paused is None


def runs_a_restore(snapshot: Snapshot) -> bool:
    """Staging runs the commit that a revert restored."""
    env = snapshot.environments[1]
    assert env.active is not None
    return any(r.restored_dry_sha == env.active.dry_sha for r in env.ledger.reverts)


@given(revert_scenarios().filter(runs_a_restore))
def test_a_revert_is_never_reverted_automatically(snapshot: Snapshot) -> None:
    assert kinds(snapshot, OpenRevert) == []


def promoted(snapshot: Snapshot) -> set[str]:
    """The dry SHAs merged into staging as promotions."""
    merges = kinds(snapshot, MergePullRequest)
    return {m.dry_sha for m in merges if m.environment == 1 and m.purpose == "promotion"}


@given(revert_scenarios())
def test_a_held_dry_sha_is_never_promoted(snapshot: Snapshot) -> None:
    held = {h.dry_sha for h in snapshot.environments[1].ledger.holds}
    assert promoted(snapshot).isdisjoint(held)


def holds_its_proposal(snapshot: Snapshot) -> bool:
    env = snapshot.environments[1]
    assert env.proposed is not None
    return any(h.dry_sha == env.proposed.dry_sha for h in env.ledger.holds)


CASES: dict[str, Callable[[Snapshot], bool]] = {
    "a revert opened": lambda s: bool(kinds(s, OpenRevert)),
    "a promotion merged": lambda s: bool(promoted(s)),
    "a promotion merged besides a hold": lambda s: (
        bool(promoted(s)) and bool(s.environments[1].ledger.holds)
    ),
    "a held proposal that would merge otherwise": lambda s: (
        holds_its_proposal(s)
        and bool(promoted(edit(s, 1, ledger=s.environments[1].ledger.without_holds())))
    ),
    "a hold released": lambda s: bool(kinds(s, ReleaseHold)),
}
"""What the properties here speak of: each must be drawn, or they hold vacuously."""
FIND = settings(max_examples=2000, phases=[Search.explicit, Search.reuse, Search.generate])
"""The first example found will do: no shrinking."""


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_scenarios_drawn_hold_every_case_the_properties_speak_of(case: str) -> None:
    assert CASES[case](find(revert_scenarios(), CASES[case], settings=FIND))


@given(revert_scenarios())
def test_a_hold_is_lifted_only_by_a_strict_descendant(snapshot: Snapshot) -> None:
    env = snapshot.environments[1]
    assert env.proposed is not None and env.proposed.dry_sha is not None
    for release in kinds(snapshot, ReleaseHold):
        assert release.dry_sha != env.proposed.dry_sha
        assert snapshot.descends(env.proposed.dry_sha, release.dry_sha)


def test_a_proposed_commit_already_in_the_active_history_gets_no_pr_and_says_why() -> None:
    snapshot = build(Env("dev", active=6, proposed=6), Env("staging", 5, 6, pr="current"))
    snapshot = edit(snapshot, 1, proposed_in_active=True)
    decision = decide(snapshot)
    kinds_of_staging = [a.kind for a in decision.actions if getattr(a, "environment", None) == 1]
    assert "close" in kinds_of_staging and "open" not in kinds_of_staging
    assert "already in environment/staging's history" in decision.environments[1].reason


def test_a_failure_a_person_has_released_does_not_pause_or_revert_again() -> None:
    reverts = (revert_of("environment/staging", 7, 5),)
    snapshot = failing(staging(reverts=reverts), 1, ago=SETTLE + 1)
    assert kinds(snapshot, PauseEnvironment)
    released = EnvLedger(
        healthy=healthy("environment/staging", 3), reverts=reverts, released_at=NOW
    )
    after = edit(snapshot, 1, ledger=released)
    assert kinds(after, PauseEnvironment) == [] and kinds(after, OpenRevert) == []
