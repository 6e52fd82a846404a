"""The freeze gate: a person's freeze or a configured freeze date stops promotions, shows
on the PR with when it ends, wakes the strategy at its end, and lets reverts through."""

from __future__ import annotations

from datetime import timedelta

from promoter.engine import FREEZE_KEY, FreezePeriod, decide
from promoter.engine.core.actions import EnvState, MergePullRequest, OpenRevert, SetCommitStatus
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.freeze import frozen as frozen_gate
from promoter.engine.gates.freeze import said
from promoter.engine.operations import promote
from promoter.models import Phase

from ..reverts.test_revert import edit, failing, staging
from ..strategies import NOW, Env, build
from ..test_decide import promotable

MANUAL = FreezePeriod(reason="incident 42", scope="everything", start=NOW, by="ada")
CHRISTMAS = FreezePeriod(
    reason="Christmas",
    scope="strategy guestbook",
    start=NOW - timedelta(hours=1),
    end=NOW + timedelta(days=2),
    time_zone="Europe/Berlin",
)


def frozen(*periods: FreezePeriod) -> Snapshot:
    return edit(build(promotable()), 0, freezes=periods)


def merges(snapshot: Snapshot) -> list[MergePullRequest]:
    return [a for a in decide(snapshot).actions if isinstance(a, MergePullRequest)]


def test_a_promotion_ready_to_merge_is_held_while_a_person_froze_it() -> None:
    assert merges(build(promotable()))  # ready: merged when not frozen
    decision = decide(frozen(MANUAL))
    assert merges(frozen(MANUAL)) == []
    verdict = decision.environments[0]
    assert verdict.state is EnvState.BLOCKED
    assert verdict.reason.startswith("frozen by ada since 2024-05-01 12:00 UTC, until lifted")
    assert "incident 42 (everything)" in verdict.reason
    [check] = [
        a for a in decision.actions if isinstance(a, SetCommitStatus) and a.status.key == FREEZE_KEY
    ]
    assert check.status.phase is Phase.PENDING
    assert decision.requeue_after is None  # lifted by a person, not by time


def test_a_freeze_date_says_when_it_ends_in_its_time_zone_and_wakes_the_strategy_then() -> None:
    decision = decide(frozen(CHRISTMAS))
    gate = next(g for g in decision.environments[0].gates if g.name == FREEZE_KEY)
    assert gate.reason == (
        "frozen until Fri 2024-05-03 14:00 Europe/Berlin: Christmas (strategy guestbook)"
    )
    assert gate.changes_at == NOW + timedelta(days=2)
    assert decision.requeue_after == timedelta(days=2).total_seconds()


def test_a_freeze_that_has_not_started_or_has_ended_holds_nothing() -> None:
    later = CHRISTMAS.model_copy(update={"start": NOW + timedelta(hours=1)})
    over = CHRISTMAS.model_copy(update={"end": NOW})
    for period in (later, over):
        assert merges(frozen(period))


def test_a_lifted_freeze_turns_its_check_green_and_the_promotion_merges() -> None:
    snapshot = frozen()
    env = snapshot.environments[0]
    assert env.proposed is not None
    shown = decide(frozen(MANUAL)).actions
    status = next(a.status for a in shown if isinstance(a, SetCommitStatus))
    proposed = env.proposed.model_copy(update={"statuses": (*env.proposed.statuses, status)})
    decision = decide(edit(snapshot, 0, proposed=proposed))
    [green] = [
        a for a in decision.actions if isinstance(a, SetCommitStatus) and a.status.key == FREEZE_KEY
    ]
    assert green.status.phase is Phase.SUCCESS
    assert merges(edit(snapshot, 0, proposed=proposed))


def test_a_revert_still_opens_in_a_frozen_environment() -> None:
    snapshot = failing(staging(), 1, ago=600)
    snapshot = edit(snapshot, 1, freezes=(MANUAL,))
    assert [a for a in decide(snapshot).actions if isinstance(a, OpenRevert)]


def test_break_glass_is_refused_while_frozen() -> None:
    refused = promote(frozen(MANUAL), 0, reason="hotfix", now=NOW, by="ada")
    assert not isinstance(refused, list)
    assert "unfreeze it first" in refused.reason
    assert isinstance(promote(frozen(), 0, reason="hotfix", now=NOW, by="ada"), list)


def test_only_the_environments_a_freeze_covers_are_held() -> None:
    snapshot = build(promotable("dev"), Env("staging", active=1, proposed=1))
    snapshot = edit(snapshot, 1, freezes=(MANUAL,))
    assert merges(snapshot)


def test_a_freeze_says_who_and_since_when_only_when_it_knows() -> None:
    assert said(MANUAL) == f"frozen by ada since {NOW:%Y-%m-%d %H:%M} UTC, until lifted: " + (
        "incident 42 (everything)"
    )
    assert said(FreezePeriod(reason="r", scope="everything", by="ada")) == (
        "frozen by ada, until lifted: r (everything)"
    )
    assert said(FreezePeriod(reason="r", scope="everything", start=NOW)) == (
        "frozen until lifted: r (everything)"
    )


def test_several_freezes_in_force_are_each_said_in_turn() -> None:
    verdict = frozen_gate(frozen(MANUAL, CHRISTMAS), 0)
    assert verdict is not None
    assert verdict.reason == f"{said(MANUAL)}; {said(CHRISTMAS)}"
