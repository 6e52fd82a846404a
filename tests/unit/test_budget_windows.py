"""The sliding window and the token bucket never let more through than they promise."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scm_plugins.windows import SlidingWindow, TokenBucket

steps = st.lists(
    st.tuples(st.integers(min_value=0, max_value=3000), st.integers(min_value=1, max_value=5)),
    min_size=1,
    max_size=120,
)
"""(milliseconds to the next call, its amount): whole numbers, so that sums are exact."""


@given(steps, st.integers(min_value=5, max_value=30), st.integers(min_value=500, max_value=10000))
def test_a_sliding_window_never_holds_more_than_its_capacity_within_any_span(
    ops: list[tuple[int, int]], capacity: int, span: int
) -> None:
    window = SlidingWindow(capacity, span)
    now, spent = 0.0, []
    for dt, amount in ops:
        now += dt
        wait = window.wait(amount, now)
        if wait > 0:
            assert math.isfinite(wait)
            now += wait
            assert window.wait(amount, now) == 0  # the wait it gave was enough
        window.spend(amount, now)
        spent.append((now, amount))
    for end, _ in spent:
        assert sum(a for t, a in spent if end - span < t <= end) <= capacity


@given(steps, st.integers(min_value=0, max_value=4))
def test_a_sliding_window_keeps_its_reserve_for_others(
    ops: list[tuple[int, int]], reserve: int
) -> None:
    window = SlidingWindow(10, 1000)
    now, spent = 0.0, []
    for dt, amount in ops:
        now += dt
        if window.wait(amount, now, reserve=reserve) == 0:
            window.spend(amount, now)
            spent.append((now, amount))
        assert sum(a for t, a in spent if now - 1000 < t) <= 10 - reserve


def test_a_sliding_window_says_when_an_amount_can_never_fit() -> None:
    assert SlidingWindow(5, 1.0).wait(4, 0.0, reserve=2) == math.inf


@given(
    steps,
    st.floats(min_value=0.5, max_value=50.0),
    st.integers(min_value=1, max_value=20),
)
def test_a_token_bucket_spends_no_more_than_its_size_plus_its_rate_over_any_interval(
    ops: list[tuple[int, int]], rate: float, capacity: int
) -> None:
    bucket = TokenBucket(rate=rate, capacity=capacity, now=0.0)
    now, taken = 0.0, []
    for dt, _ in ops:
        now += dt / 1000
        wait = bucket.wait(1, now)
        now += wait
        bucket.take(1, now)
        taken.append(now)
    for i, start in enumerate(taken):
        for j in range(i, len(taken)):
            assert j - i + 1 <= capacity + rate * (taken[j] - start) + 1e-6


def test_a_token_bucket_refund_never_overfills_and_a_late_charge_is_a_debt() -> None:
    bucket = TokenBucket(rate=1.0, capacity=2, now=0.0)
    bucket.give(5, 0.0)
    bucket.take(2, 0.0)
    assert bucket.wait(1, 0.0) == 1.0  # it held its capacity, 2, not 7
    bucket.take(1, 0.0)
    assert bucket.wait(1, 0.0) == 2.0  # a debt of 1, paid back before the next token


@given(
    st.integers(min_value=1, max_value=1000),
    st.floats(min_value=0.0, max_value=2.0),
    st.integers(min_value=1, max_value=10**6),
)
def test_a_retuned_token_bucket_keeps_its_share_full_when_it_grows_and_a_debt_as_it_was(
    capacity: int, spent: float, size: int
) -> None:
    """Grown, it is as full (as a share of itself) as it was; shrunk, it keeps what was
    earned up to its new size; a debt is never made larger or forgiven."""
    bucket = TokenBucket(rate=0.0, capacity=capacity, now=0.0)
    taken = round(spent * capacity)
    bucket.take(taken, now=0.0)
    held = capacity - taken
    bucket.retune(rate=1.0, capacity=size, now=0.0)
    if held <= 0:
        expected = float(held)
    elif size > capacity:
        expected = held * size / capacity
    else:
        expected = float(min(held, size))
    assert bucket.wait(1, now=0.0) == pytest.approx(max(0.0, 1 - expected))
    if expected <= size - 1:
        assert bucket.wait(expected + 1, now=0.0) == pytest.approx(1.0)


# --- the edges: exactly full, exactly at the span, more than the capacity --------------------


def test_a_sliding_window_entry_stops_counting_exactly_span_seconds_after_it() -> None:
    window = SlidingWindow(capacity=2, span=60)
    window.spend(2, now=0.0)
    assert window.wait(1, now=59.0) == 1.0
    assert window.wait(1, now=60.0) == 0.0
    assert window.wait(2, now=60.0) == 0.0  # no reserve asked: the whole capacity


def test_a_token_bucket_at_its_edges() -> None:
    bucket = TokenBucket(rate=1.0, capacity=10.0, now=0.0)
    bucket.take(10, now=0.0)
    assert bucket.wait(10, now=0.0) == 10.0  # exactly the capacity: it will fit
    assert bucket.wait(8, now=0.0, reserve=4) == math.inf  # with the reserve: never
    assert bucket.wait(11, now=0.0) == math.inf
    still = TokenBucket(rate=0.0, capacity=5.0, now=0.0)
    assert still.wait(5, now=0.0) == 0.0  # exactly what it holds
    still.take(1, now=0.0)
    assert still.wait(5, now=1.0) == math.inf  # short, and nothing refills it


def test_a_sliding_window_forgets_what_left_it_and_keeps_counting_the_rest() -> None:
    window = SlidingWindow(capacity=10, span=10)
    window.spend(1, now=0.0)
    window.spend(5, now=5.0)
    assert window.wait(5, now=10.5) == 0.0  # 5 of 10 left in it: 5 more fit
    assert window.wait(6, now=10.5) == 4.5  # one more only once the 5 leave, at 15
