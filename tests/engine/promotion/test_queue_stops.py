"""Stop means stop (pure): a PR the promoter has in the merge queue is taken out wherever the
verdict would not merge it now, told on the PR, enqueued again at once when it passes; a
merge from the queue settles the attempt, and one a stop should have held is a race."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from promoter.engine import (
    CommentPullRequest,
    DequeuePullRequest,
    EnqueuePullRequest,
    Pin,
    QueueAttempt,
    Queueing,
    QueueRace,
    RecordDequeue,
    RecordQueueMerge,
    decide,
)
from promoter.engine.core.ledger_state import EnvLedger, Hold
from promoter.engine.core.snapshot import FreezePeriod, Snapshot
from promoter.models import QueueEntry

from ..reverts.test_revert import edit
from ..strategies import NOW, Env, build, dry, hydrated

DEV = "environment/dev"
HEAD = hydrated(f"{DEV}-next", 3)


def attempt(**fields: Any) -> QueueAttempt:
    return QueueAttempt(
        number=10,
        head_sha=HEAD,
        attempts=1,
        enqueued_at=NOW - timedelta(minutes=1),
        dry_sha=dry(3),
        **fields,
    )


def queued(ci: str = "success", **ledger: Any) -> Snapshot:
    """dev promoting 3 over 1 through the queue, its PR waiting there (attempt 1)."""
    snapshot = build(
        Env(
            "dev",
            active=1,
            proposed=3,
            proposed_keys=("ci",),
            proposed_statuses={"ci": ci},
            pr="current",
        )
    )
    fields = {"queue": attempt(), **ledger}
    return edit(snapshot, 0, queueing=Queueing(on=True), ledger=EnvLedger(**fields))


def frozen(snapshot: Snapshot) -> Snapshot:
    period = FreezePeriod(reason="incident 42", scope="everything", start=NOW, by="ada")
    return edit(snapshot, 0, freezes=(period,))


def of(snapshot: Snapshot, kind: type) -> list[Any]:
    return [a for a in decide(snapshot).actions if isinstance(a, kind)]


def test_a_queued_pr_with_every_gate_passing_stays_where_it_is() -> None:
    assert of(queued(), DequeuePullRequest) == []
    assert of(queued(), EnqueuePullRequest) == []


def test_a_freeze_takes_a_queued_pr_out_first_and_says_so() -> None:
    snapshot = frozen(queued())
    decision = decide(snapshot)
    assert isinstance(decision.actions[0], DequeuePullRequest)  # before any other write
    [out] = of(snapshot, DequeuePullRequest)
    assert out.number == 10 and "frozen by ada" in out.reason and "frozen by ada" in out.race
    assert "took this pull request out of the merge queue" in out.comment
    [dev] = decision.environments
    assert "pull request #10 is out of the merge queue until every gate passes" in dev.reason


def test_a_hold_a_pin_elsewhere_a_failed_gate_a_newer_head_each_take_it_out() -> None:
    hold = Hold(dry_sha=dry(3), reason="bad build", since=NOW, source="manual")
    pin = Pin(dry_sha=dry(1), reason="keep 1", since=NOW)
    newer = edit(
        queued(), 0, ledger=EnvLedger(queue=attempt().model_copy(update={"head_sha": "f" * 40}))
    )
    cases = {
        "is held in environment/dev": queued(holds=(hold,)),
        "is pinned to": queued(pin=pin),
        "ci failed": queued(ci="failure"),
        "a newer head: environment/dev-next is at": newer,
    }
    for words, snapshot in cases.items():
        [out] = of(snapshot, DequeuePullRequest)
        assert words in out.reason, (words, out.reason)


def test_a_pr_taken_out_waits_once_out_and_is_enqueued_again_at_once_once_lifted() -> None:
    out = attempt(dequeued_at=NOW - timedelta(seconds=1), reason="frozen", withdrawn=True)
    assert of(frozen(queued(queue=out)), DequeuePullRequest) == []  # not asked again
    [again] = of(queued(queue=out), EnqueuePullRequest)
    assert again.attempt == 1  # no failed attempt, no backoff


def test_a_pr_the_queue_dropped_waits_its_backoff_as_before() -> None:
    failed = attempt(dequeued_at=NOW - timedelta(seconds=1), reason="checks failed")
    assert of(queued(queue=failed), EnqueuePullRequest) == []


def merged_by_queue(**ledger: Any) -> Snapshot:
    """dev runs 3, which its PR promoted from the queue; the PR no longer open."""
    snapshot = build(Env("dev", active=3, proposed=3))
    fields = {"queue": attempt(), **ledger}
    return edit(snapshot, 0, queueing=Queueing(on=True), ledger=EnvLedger(**fields))


def test_a_merge_from_the_queue_settles_the_attempt_and_is_no_race() -> None:
    [settled] = of(merged_by_queue(), RecordQueueMerge)
    assert (settled.number, settled.race) == (10, "")
    assert of(merged_by_queue(), CommentPullRequest) == []


def test_a_merge_from_the_queue_while_frozen_is_a_race_told_on_the_pr() -> None:
    snapshot = frozen(merged_by_queue())
    [race] = of(snapshot, RecordQueueMerge)
    assert "frozen by ada" in race.race
    [told] = of(snapshot, CommentPullRequest)
    assert told.number == 10 and "before the promoter could take it out" in told.body
    [dev] = decide(snapshot).environments
    assert "pull request #10 was merged from the merge queue while it should have stopped" in (
        dev.reason
    )


def test_a_race_recorded_stays_in_the_reason_while_the_environment_runs_it() -> None:
    race = QueueRace(number=10, dry_sha=dry(3), reason="frozen by ada", at=NOW)
    settled = attempt(merged_at=NOW)
    runs = merged_by_queue(queue=settled, queue_races=(race,))
    [dev] = decide(runs).environments
    assert "pull request #10 was merged from the merge queue while it should have stopped" in (
        dev.reason
    )
    assert of(runs, RecordQueueMerge) == []  # recorded once
    later = edit(build(Env("dev", active=4, proposed=4)), 0, ledger=runs.environments[0].ledger)
    [dev] = decide(later).environments
    assert "merged from the merge queue" not in dev.reason  # once dev runs something else


def test_an_open_pr_seen_stale_after_its_merge_is_not_taken_out_but_settled() -> None:
    """The PR read from a cache says open, but dev already runs its change."""
    snapshot = edit(queued(), 0, active=merged_by_queue().environments[0].active)
    assert of(snapshot, DequeuePullRequest) == []
    assert [r.race for r in of(frozen(snapshot), RecordQueueMerge)] != [""]


def test_a_pr_the_queue_merged_after_the_branch_was_read_is_no_failed_attempt() -> None:
    """The branch was read before the queue merged, its entry after: merged, not taken out."""
    snapshot = queued()
    gone = Queueing(on=True, entry=QueueEntry(queued=False, merged=True))
    snapshot = edit(snapshot, 0, queueing=gone)
    decision = decide(snapshot)
    assert of(snapshot, RecordDequeue) == [] and of(snapshot, CommentPullRequest) == []
    assert of(snapshot, EnqueuePullRequest) == []
    [dev] = decision.environments
    assert "pull request #10 was merged by the merge queue" in dev.reason
    assert decision.requeue_after is not None and decision.requeue_after <= 2.0
    taken_out = Queueing(on=True, entry=QueueEntry(queued=False, removed_reason="CI failed"))
    assert len(of(edit(snapshot, 0, queueing=taken_out), RecordDequeue)) == 1
