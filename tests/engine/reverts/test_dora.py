"""DORA figures checked against a history computed by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord, Revert
from promoter.engine.reverts.dora import dora

NOW = datetime(2026, 3, 31, 12, 0, tzinfo=UTC)


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


def healthy(sha: str, when: datetime) -> HealthyRecord:
    return HealthyRecord(dry_sha=sha, hydrated_sha="h" + sha, healthy_since=when)


def revert(bad: str, restored: str, when: datetime) -> Revert:
    return Revert(
        bad_dry_sha=bad,
        bad_hydrated_sha="h" + bad,
        restored_dry_sha=restored,
        restored_hydrated_sha="h" + restored,
        reason="health failed",
        trigger="auto",
        opened_at=when,
        branch="environment/prod-revert",
        revert_sha="r" + bad,
        pr=9,
    )


# By hand, for prod over the 30 days up to 2026-03-31 12:00 (window from 03-01 12:00):
#   a: committed 02-20, healthy 02-25             -> outside the window
#   b: committed 03-10 00:00, healthy 03-10 06:00 -> lead 6h
#   c: committed 03-12 00:00, healthy 03-13 00:00 -> lead 24h
#   c healthy again 03-20 (same commit, after a restart) -> counted once
#   d: committed 03-14 00:00, reverted 03-14 10:00 (never healthy); c healthy 03-14 12:00
#      -> a failure, restored in 2h
#   e: committed 03-20 00:00, healthy 03-21 00:00 -> lead 24h
#   f: committed 03-25 00:00, reverted 03-25 08:00, nothing healthy since -> unrestored
# deployments b c d e f = 5; failures d f = 2; CFR 0.4; leads 6h 24h 24h -> median 24h;
# restores 2h -> median 2h; frequency 5/30 a day.
COMMITS = {
    "a": datetime(2026, 2, 20, tzinfo=UTC),
    "b": at(10),
    "c": at(12),
    "d": at(14),
    "e": at(20),
    "f": at(25),
}
LEDGER = EnvLedger(
    healthy=(
        healthy("a", datetime(2026, 2, 25, tzinfo=UTC)),
        healthy("b", at(10, 6)),
        healthy("c", at(13)),
        healthy("c", at(14, 12)),
        healthy("c", at(20)),
        healthy("e", at(21)),
    ),
    reverts=(revert("d", "c", at(14, 10)), revert("f", "e", at(25, 8))),
)


def test_the_figures_match_the_hand_computed_history() -> None:
    f = dora("environment/prod", LEDGER, commit_times=COMMITS, now=NOW)
    assert f.deployments == 5
    assert f.deployment_frequency_per_day == 5 / 30
    assert f.lead_times_seconds == (6 * 3600, 24 * 3600, 24 * 3600)
    assert f.lead_time_median_seconds == 24 * 3600
    assert f.failures == 2
    assert f.change_failure_rate == 0.4
    assert f.restore_times_seconds == (2 * 3600,)
    assert f.time_to_restore_median_seconds == 2 * 3600


def test_the_daily_chart_puts_each_deployment_on_its_day() -> None:
    f = dora("environment/prod", LEDGER, commit_times=COMMITS, now=NOW)
    assert len(f.daily_deployments) == 30 and sum(f.daily_deployments) == 5
    start = NOW - timedelta(days=30)
    days = [
        int((when - start).total_seconds() // 86400)
        for when in (at(10, 6), at(13), at(14, 10), at(21), at(25, 8))
    ]
    assert [i for i, v in enumerate(f.daily_deployments) if v] == sorted(days)


def test_an_environment_with_no_history_has_no_rates() -> None:
    f = dora("environment/dev", EnvLedger(), commit_times={}, now=NOW)
    assert f.deployments == 0 and f.change_failure_rate is None
    assert f.lead_time_median_seconds is None and f.time_to_restore_median_seconds is None
