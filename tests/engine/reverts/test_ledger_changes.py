"""What each ledger action writes (``promoter.engine.reverts.ledger_changes``), as properties: a
revert holds the bad dry commit where it must and nowhere else, a release lifts exactly
its holds, a hold set twice is set once, a pin lifted leaves the ledger as it was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import get_args

from hypothesis import given
from hypothesis import strategies as st

from promoter.engine import LedgerAction, RevertOpened, ledger_changes
from promoter.engine.core.actions import (
    Announce,
    ApproveChange,
    HoldDryCommit,
    OpenRevert,
    PauseEnvironment,
    PinEnvironment,
    RecordHealthy,
    RecordOverride,
    ReleaseHold,
    ResumeEnvironment,
)
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord, Hold, Pin
from tests.engine.strategies import NOW, dry

SHAS = st.sampled_from([dry(i) for i in range(6)])
TIMES = st.integers(min_value=0, max_value=10_000).map(lambda s: NOW - timedelta(seconds=s))


def branches(count: int) -> list[str]:
    return [f"environment/e{i}" for i in range(count)]


holds = st.builds(
    Hold,
    dry_sha=SHAS,
    reason=st.sampled_from(["reverted", "held by a person"]),
    since=TIMES,
    source=st.sampled_from(["revert", "manual"]),
)
ledgers = st.builds(
    EnvLedger,
    holds=st.lists(holds, max_size=4, unique_by=lambda h: h.dry_sha).map(tuple),
    paused=st.none() | st.just("a second failure after a revert"),
    pin=st.none() | st.builds(Pin, dry_sha=SHAS, reason=st.just("freeze"), since=TIMES),
    approved_changes=st.lists(SHAS, max_size=3, unique=True).map(tuple),
)


@st.composite
def reverts(draw: st.DrawFn, *, named: bool) -> tuple[RevertOpened, list[str]]:
    """A revert opened in one of 1-6 environments; ``named``: with the holders the engine
    named (that environment's downstream ones), else none (every later one)."""
    names = branches(draw(st.integers(min_value=1, max_value=6)))
    index = draw(st.integers(min_value=0, max_value=len(names) - 1))
    hold_in: tuple[int, ...] = ()
    if named:
        later = st.lists(st.integers(min_value=index + 1, max_value=len(names) - 1), unique=True)
        hold_in = tuple(sorted({index, *draw(later)} if index + 1 < len(names) else {index}))
    action = OpenRevert(
        environment=index,
        bad_dry_sha=draw(SHAS),
        bad_hydrated_sha="b" * 40,
        restore=HealthyRecord(dry_sha=dry(0), hydrated_sha="a" * 40, healthy_since=NOW),
        reason="health failed",
        trigger=draw(st.sampled_from(["auto", "manual"])),
        auto_merge=draw(st.booleans()),
        hold_in=hold_in,
    )
    return RevertOpened(action, f"{names[index]}-revert-bbbbbbb", "c" * 40, 42), names


def held(ledger: EnvLedger, sha: str) -> bool:
    return any(h.dry_sha == sha for h in ledger.holds)


@given(reverts(named=False), ledgers)
def test_a_revert_holds_the_bad_dry_commit_in_its_environment_and_every_later_one_only(
    revert: tuple[RevertOpened, list[str]], ledger: EnvLedger
) -> None:
    opened, names = revert
    index, bad = opened.action.environment, opened.action.bad_dry_sha
    told = ledger_changes(opened, branches=names, now=NOW)
    assert set(told.changes) == set(names[index:])
    for name in names[index:]:
        after = told.changes[name](ledger)
        assert held(after, bad)
        assert [h for h in after.holds if h.dry_sha != bad] == [
            h for h in ledger.holds if h.dry_sha != bad
        ]
        assert len(after.reverts) == (1 if name == names[index] else 0)


@given(reverts(named=True), ledgers)
def test_a_revert_holds_the_bad_dry_commit_exactly_where_the_engine_said(
    revert: tuple[RevertOpened, list[str]], ledger: EnvLedger
) -> None:
    opened, names = revert
    told = ledger_changes(opened, branches=names, now=NOW)
    assert set(told.changes) == {names[p] for p in opened.action.hold_in}
    for change in told.changes.values():
        assert held(change(ledger), opened.action.bad_dry_sha)


@given(reverts(named=False), st.datetimes(timezones=st.just(UTC), min_value=datetime(2020, 1, 1)))
def test_a_revert_is_recorded_at_the_time_it_is_given_and_told_with_its_pull_request(
    revert: tuple[RevertOpened, list[str]], now: datetime
) -> None:
    opened, names = revert
    told = ledger_changes(opened, branches=names, now=now)
    here = names[opened.action.environment]
    [record] = told.changes[here](EnvLedger()).reverts
    assert (record.opened_at, record.pr, record.branch, record.revert_sha) == (
        now,
        opened.number,
        opened.branch,
        opened.commit,
    )
    action = opened.action
    assert (record.auto_merge, record.trigger, record.reason) == (
        action.auto_merge,
        action.trigger,
        action.reason,
    )
    assert (record.bad_dry_sha, record.restored_dry_sha, record.restored_hydrated_sha) == (
        action.bad_dry_sha,
        action.restore.dry_sha,
        action.restore.hydrated_sha,
    )
    assert all(h.since == now for h in told.changes[names[-1]](EnvLedger()).holds)
    assert (told.environment, told.event, told.pr, told.sha, told.durable) == (
        here,
        "revert",
        42,
        opened.action.bad_dry_sha,
        True,
    )
    assert (told.level, told.message, told.text) == ("warning", "revert opened", "health failed")
    assert told.fields == {
        "pr": 42,
        "restore": opened.action.restore.dry_sha,
        "reason": "health failed",
    }


@given(ledgers, SHAS)
def test_a_release_removes_exactly_the_holds_of_its_dry_commit(ledger: EnvLedger, sha: str) -> None:
    release = ReleaseHold(environment=0, dry_sha=sha, reason="fixed")
    [change] = ledger_changes(release, branches=branches(1), now=NOW).changes.values()
    assert change(ledger).holds == tuple(h for h in ledger.holds if h.dry_sha != sha)


@given(ledgers, SHAS, TIMES)
def test_a_hold_set_twice_is_the_hold_set_once(
    ledger: EnvLedger, sha: str, since: datetime
) -> None:
    hold = HoldDryCommit(environment=0, dry_sha=sha, reason="bad", since=since)
    [change] = ledger_changes(hold, branches=branches(1), now=NOW).changes.values()
    once = change(ledger)
    assert change(once) == once
    assert [h.dry_sha for h in once.holds].count(sha) == 1


@given(reverts(named=False), ledgers)
def test_a_revert_written_again_holds_no_later_environment_twice(
    revert: tuple[RevertOpened, list[str]], ledger: EnvLedger
) -> None:
    opened, names = revert
    told = ledger_changes(opened, branches=names, now=NOW)
    for name in names[opened.action.environment + 1 :]:
        once = told.changes[name](ledger)
        assert told.changes[name](once) == once


@given(ledgers, SHAS, TIMES)
def test_a_pin_lifted_leaves_the_ledger_as_lifting_it_alone_would(
    ledger: EnvLedger, sha: str, since: datetime
) -> None:
    def apply(action: PinEnvironment, value: EnvLedger) -> EnvLedger:
        [change] = ledger_changes(action, branches=branches(1), now=NOW).changes.values()
        return change(value)

    pin = PinEnvironment(environment=0, dry_sha=sha, reason="freeze", since=since)
    unpin = PinEnvironment(environment=0, dry_sha=None)
    pinned = apply(pin, ledger)
    assert pinned.pin == Pin(dry_sha=sha, reason="freeze", since=since)
    assert apply(unpin, pinned) == apply(unpin, ledger) == ledger.model_copy(update={"pin": None})


EXAMPLES: list[LedgerAction] = [
    RecordHealthy(environment=1, dry_sha=dry(4), hydrated_sha="d" * 40, since=NOW),
    ReleaseHold(environment=1, dry_sha=dry(1), reason="fixed"),
    HoldDryCommit(environment=1, dry_sha=dry(4), reason="bad", since=NOW),
    ResumeEnvironment(environment=1, at=NOW),
    PinEnvironment(environment=1, dry_sha=dry(4), reason="freeze", since=NOW),
    ApproveChange(environment=1, dry_sha=dry(4)),
    Announce(environment=1, dry_sha=dry(4), at=NOW),
    PauseEnvironment(environment=1, reason="failed again"),
    RecordOverride(environment=1, dry_sha=dry(4), reason="incident", at=NOW),
]
BUSY = EnvLedger(
    holds=(Hold(dry_sha=dry(1), reason="reverted", since=NOW, source="revert"),),
    paused="a second failure after a revert",
    pin=Pin(dry_sha=dry(1), reason="freeze", since=NOW),
)


def test_every_kind_of_ledger_action_changes_the_ledger_of_its_own_environment_only() -> None:
    assert {type(a) for a in EXAMPLES} == set(get_args(LedgerAction))
    names = branches(3)
    for action in EXAMPLES:
        told = ledger_changes(action, branches=names, now=NOW)
        assert told.environment == names[1]
        assert list(told.changes) == [names[1]], action.kind
        assert told.changes[names[1]](BUSY) != BUSY, action.kind
        assert told.durable is not isinstance(action, RecordHealthy)


def test_a_pin_set_and_lifted_is_told_as_a_warning_with_its_reason_and_dry_commit() -> None:
    def told(action: PinEnvironment) -> tuple[str, str, str, str, str]:
        changes = ledger_changes(action, branches=branches(1), now=NOW)
        return changes.level, changes.message, changes.event, changes.text, changes.sha

    pin = PinEnvironment(environment=0, dry_sha=dry(4), reason="audit week", since=NOW)
    unpin = PinEnvironment(environment=0, dry_sha=None, reason="audit over")
    assert told(pin) == ("warning", "pin set", "pinned", "audit week", dry(4))
    assert told(unpin) == ("warning", "pin lifted", "unpinned", "audit over", "")


def test_lifting_a_pin_at_a_given_time_lifts_it() -> None:
    unpin = PinEnvironment(environment=0, dry_sha=None, since=NOW)
    [change] = ledger_changes(unpin, branches=branches(1), now=NOW).changes.values()
    assert change(BUSY).pin is None


# --- how each kind of change is told: the log line, its level, the observers' event ---------

SHA = "d" * 40
TOLD = [
    (
        RecordHealthy(environment=1, dry_sha=SHA, hydrated_sha="h" * 40, since=NOW),
        ("info", "environment healthy", "healthy", "healthy", SHA, False),
    ),
    (
        ReleaseHold(environment=1, dry_sha=SHA, reason="released by ada"),
        ("info", "hold released", "released", "released by ada", SHA, True),
    ),
    (
        HoldDryCommit(environment=1, dry_sha=SHA, reason="held by ada: bad", since=NOW),
        ("warning", "hold set", "held", "held by ada: bad", SHA, True),
    ),
    (
        ResumeEnvironment(environment=1, at=NOW),
        ("info", "environment resumed", "", "", "", True),
    ),
    (
        ApproveChange(environment=1, dry_sha=SHA),
        ("warning", "blocked change approved", "", "", SHA, True),
    ),
    (
        Announce(environment=1, dry_sha=SHA, at=NOW),
        ("info", "change announced", "announced", "upcoming change", SHA, True),
    ),
    (
        PauseEnvironment(environment=1, reason="a revert failed"),
        ("warning", "environment paused", "paused", "a revert failed", "", True),
    ),
    (
        RecordOverride(environment=1, dry_sha=SHA, reason="hotfix", at=NOW),
        ("info", "", "", "", SHA, True),
    ),
    (
        PinEnvironment(environment=1, dry_sha=SHA, reason="audit", since=NOW),
        ("warning", "pin set", "pinned", "audit", SHA, True),
    ),
    (
        PinEnvironment(environment=1, dry_sha=None, reason="done"),
        ("warning", "pin lifted", "unpinned", "done", "", True),
    ),
]


def test_each_kind_of_change_is_told_at_its_level_with_its_message_event_and_commit() -> None:
    names = ["environment/dev", "environment/staging", "environment/prod"]
    for action, expected in TOLD:
        told = ledger_changes(action, branches=names, now=NOW)
        seen = (told.level, told.message, told.event, told.text, told.sha, told.durable)
        assert seen == expected, action
        assert told.environment == "environment/staging"
        assert list(told.changes) == ["environment/staging"]


def test_each_kind_of_change_writes_what_it_says() -> None:
    names = ["environment/dev", "environment/staging"]

    def written(action: object, ledger: EnvLedger | None = None) -> EnvLedger:
        told = ledger_changes(action, branches=names, now=NOW)  # type: ignore[arg-type]
        return told.changes["environment/staging"](ledger or EnvLedger())

    paused = written(PauseEnvironment(environment=1, reason="a revert failed"))
    assert paused.paused == "a revert failed"
    resumed = written(ResumeEnvironment(environment=1, at=NOW), paused)
    assert (resumed.paused, resumed.released_at) == (None, NOW)
    assert written(ApproveChange(environment=1, dry_sha=SHA)).approved_changes == (SHA,)
    [note] = written(Announce(environment=1, dry_sha=SHA, at=NOW)).announcements
    assert (note.dry_sha, note.at) == (SHA, NOW)
    [override] = written(
        RecordOverride(environment=1, dry_sha=SHA, reason="hotfix", at=NOW)
    ).overrides
    assert (override.dry_sha, override.reason, override.at) == (SHA, "hotfix", NOW)
    [healthy] = written(
        RecordHealthy(environment=1, dry_sha=SHA, hydrated_sha="h" * 40, since=NOW)
    ).healthy
    assert (healthy.dry_sha, healthy.hydrated_sha, healthy.healthy_since) == (SHA, "h" * 40, NOW)
    [hold] = written(HoldDryCommit(environment=1, dry_sha=SHA, reason="bad", since=NOW)).holds
    assert (hold.dry_sha, hold.reason, hold.since, hold.source) == (SHA, "bad", NOW, "manual")
