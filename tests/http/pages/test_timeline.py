"""An environment's history on the dashboard: entries newest first, with durations."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from promoter.engine import EnvLedger, HealthyRecord, Hold, Revert
from promoter.http.pages.timeline import duration, timeline

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def minutes(n: int) -> datetime:
    return T0 + timedelta(minutes=n)


def test_each_entry_lasts_until_the_next_commit_ran_or_a_revert_was_opened() -> None:
    ledger = EnvLedger(
        healthy=(
            HealthyRecord(dry_sha="a" * 40, hydrated_sha="1" * 40, healthy_since=minutes(0)),
            HealthyRecord(dry_sha="b" * 40, hydrated_sha="2" * 40, healthy_since=minutes(10)),
            HealthyRecord(dry_sha="b" * 40, hydrated_sha="4" * 40, healthy_since=minutes(33)),
        ),
        reverts=(
            Revert(
                bad_dry_sha="c" * 40,
                bad_hydrated_sha="3" * 40,
                restored_dry_sha="b" * 40,
                restored_hydrated_sha="2" * 40,
                reason="health failed",
                trigger="auto",
                opened_at=minutes(30),
                branch="environment/dev-revert-c",
                revert_sha="5" * 40,
                pr=4,
            ),
        ),
        holds=(Hold(dry_sha="c" * 40, reason="reverted", since=minutes(30), source="revert"),),
    )
    entries = timeline(ledger, now=minutes(60))
    assert [(e.kind, e.dry_sha[0], e.seconds) for e in entries] == [
        ("healthy", "b", 27 * 60),
        ("revert", "c", 3 * 60),
        ("hold", "c", 30 * 60),
        ("healthy", "b", 20 * 60),
        ("healthy", "a", 10 * 60),
    ]
    assert "auto revert (PR #4) to bbbbbbbb: health failed" in entries[1].text


def test_durations_read_as_people_write_them() -> None:
    assert [duration(s) for s in (None, 12, 250, 3 * 3600 + 120, 2 * 86400 + 7200)] == [
        "—",
        "12s",
        "4m 10s",
        "3h 2m",
        "2d 2h",
    ]


def test_a_commit_that_ran_healthy_lasts_until_the_environment_moved_on_not_until_now() -> None:
    ledger = EnvLedger(
        healthy=(HealthyRecord(dry_sha="a" * 40, hydrated_sha="1" * 40, healthy_since=minutes(0)),)
    )
    moved = timeline(ledger, now=minutes(60), running="b" * 40, moved_at=minutes(4))
    assert [(e.text, e.seconds) for e in moved] == [("ran healthy", 4 * 60)]
    still = timeline(ledger, now=minutes(60), running="a" * 40, moved_at=minutes(0))
    assert [(e.text, e.seconds) for e in still] == [("runs healthy", 60 * 60)]
