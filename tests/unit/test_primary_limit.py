"""A credential's primary rate limit from the SCM's own headers: windows, late answers,
other resources, servers with the limit off, and the pace it allows."""

from __future__ import annotations

import pytest

from scm_plugins.primary import PrimaryLimit

WALL = 1_700_000_000.0
"""The epoch time of the answers; the monotonic clock reads 100 at the same moment."""


def headers(remaining: int, reset: float, *, limit: int = 5000, **more: str) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset": str(reset),
        **more,
    }


def fresh() -> PrimaryLimit:
    return PrimaryLimit(limit=5000, window=3600.0)


def test_within_one_window_the_lowest_remaining_wins_and_a_new_reset_starts_a_window() -> None:
    limit = fresh()
    limit.learn(headers(4000, WALL + 600), now=100.0, wall=WALL)
    assert (limit.remaining, limit.reset_at) == (4000, 700.0)
    limit.learn(headers(4100, WALL + 600), now=101.0, wall=WALL + 1)  # answered out of order
    assert limit.remaining == 4000
    limit.learn(headers(3900, WALL + 600), now=102.0, wall=WALL + 2)
    assert limit.remaining == 3900
    limit.learn(headers(4999, WALL + 4200), now=701.0, wall=WALL + 601)  # the next window
    assert (limit.remaining, limit.reset_at) == (4999, 4300.0)
    limit.learn(headers(10, WALL + 600), now=702.0, wall=WALL + 602)  # late, from the one before
    assert (limit.remaining, limit.reset_at) == (4999, 4300.0)


def test_the_limit_follows_the_header_and_is_never_below_one() -> None:
    limit = fresh()
    limit.learn(headers(0, WALL + 60, limit=0), now=100.0, wall=WALL)
    assert limit.limit == 1
    limit.learn(headers(0, WALL + 60, limit=60), now=100.0, wall=WALL)
    assert limit.limit == 60


def test_another_resources_headers_leave_the_core_limit_alone() -> None:
    limit = fresh()
    limit.learn(headers(5, WALL + 60, **{"X-RateLimit-Resource": "search"}), now=100.0, wall=WALL)
    assert (limit.remaining, limit.reset_at) == (None, None)
    limit.learn(headers(5, WALL + 60, **{"X-RateLimit-Resource": "core"}), now=100.0, wall=WALL)
    assert limit.remaining == 5


def test_an_answer_without_the_headers_lifts_the_limit_until_they_come_back() -> None:
    limit = fresh()
    limit.learn({"Content-Type": "application/json"}, now=100.0, wall=WALL)
    assert limit.unlimited
    limit.learn(headers(10, WALL + 60), now=100.0, wall=WALL)
    assert not limit.unlimited
    limit.learn({"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "x"}, now=100, wall=WALL)
    assert not limit.unlimited  # garbled, not absent: the limit holds


def test_what_is_available_counts_the_calls_in_flight_and_resets_with_the_window() -> None:
    limit = fresh()
    limit.learn(headers(100, WALL + 60), now=100.0, wall=WALL)
    assert limit.available(100.0, in_flight=30) == 70.0
    assert limit.available(159.9, in_flight=0) == 100.0
    assert limit.available(160.0, in_flight=1) == 4999.0  # the reset: the whole limit again
    assert limit.remaining is None and limit.reset_at is None


def test_until_the_reset_is_the_time_left_never_negative_and_a_window_when_unknown() -> None:
    limit = fresh()
    assert limit.until_reset(100.0) == 3600.0
    limit.learn(headers(100, WALL + 60), now=100.0, wall=WALL)
    assert limit.until_reset(130.0) == 30.0
    assert limit.until_reset(100.5) == 59.5
    limit.reset_at = 150.0
    assert limit.until_reset(160.0) == 0.0


def test_the_pace_spreads_what_is_left_and_never_falls_below_the_even_rate() -> None:
    limit = fresh()
    even = 5000 / 3600
    assert limit.rate(100.0, in_flight=0) == pytest.approx(even)
    limit.learn(headers(3000, WALL + 600), now=100.0, wall=WALL)
    assert limit.rate(100.0, in_flight=0) == pytest.approx(3000 / 600)
    assert limit.rate(400.0, in_flight=1000) == pytest.approx(2000 / 300)
    assert limit.rate(699.5, in_flight=0) == pytest.approx(3000 / 0.5)  # the last second
    limit.learn(headers(10, WALL + 600), now=100.0, wall=WALL)
    assert limit.rate(100.0, in_flight=0) == pytest.approx(even)  # little left: never slower
