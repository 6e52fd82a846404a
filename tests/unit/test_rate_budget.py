"""A credential's rate budget: never over GitHub's primary or secondary limits, in any window.

Calls are attempted at random instants (reads and writes, many at once); a call goes
only when the budget says 0. Whatever the pattern, no sliding minute holds more than
the points or writes allowed, no window more than its requests, and the even pace
lets every call through eventually.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scm_plugins.limiter import READ_POINTS, WRITE_POINTS, Budget, RateBudget

SMALL = Budget(
    per_window=120,
    window=60.0,
    minute=1.0,
    points_per_minute=30,
    writes_per_minute=4,
    writes_per_hour=40,
    burst=0.1,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


attempts = st.lists(
    st.tuples(st.floats(min_value=0.0, max_value=0.5), st.booleans()), min_size=1, max_size=300
)


@settings(max_examples=200, deadline=None)
@given(attempts)
def test_no_window_ever_holds_more_than_the_limits(pattern: list[tuple[float, bool]]) -> None:
    clock = Clock()
    budget = RateBudget(SMALL, clock=clock)
    sent: list[tuple[float, bool]] = []
    for gap, write in pattern:
        clock.now += gap
        if budget.delay(write=write) == 0:
            sent.append((clock.now, write))
    for at, _ in sent:
        minute = [(t, w) for t, w in sent if at <= t < at + SMALL.minute]
        points = sum(WRITE_POINTS if w else READ_POINTS for _, w in minute)
        assert points <= SMALL.points_per_minute
        assert sum(w for _, w in minute) <= SMALL.writes_per_minute
        window = [t for t, _ in sent if at <= t < at + SMALL.window]
        assert len(window) <= SMALL.per_window


def test_a_burst_goes_at_once_and_the_rest_is_spread_evenly() -> None:
    clock = Clock()
    budget = RateBudget(Budget(per_window=1000, window=100.0, burst=0.1), clock=clock)
    at_once = 0
    while budget.delay(write=False) == 0:
        at_once += 1
    assert at_once == 100  # the burst: 10 % of the window's budget
    wait = budget.delay(write=False)
    assert 0 < wait <= 100.0 / 1000 + 1e-9  # then one call per window / limit
    clock.now += wait
    assert budget.delay(write=False) == 0


def test_what_github_says_is_left_replaces_the_count() -> None:
    clock = Clock()
    budget = RateBudget(Budget(per_window=5000, window=3600.0), clock=clock)
    budget.observe(5000, 0, clock.now + 120)  # another process spent it all
    assert budget.delay(write=False) == 120
    clock.now += 121
    assert budget.delay(write=False) == 0  # a new window


def test_writes_wait_for_the_minute_while_reads_go_on() -> None:
    clock = Clock()
    budget = RateBudget(SMALL, clock=clock)
    for _ in range(SMALL.writes_per_minute):
        clock.now += 0.2
        assert budget.delay(write=True) == 0
    assert budget.delay(write=True) > 0
    clock.now += 0.2
    assert budget.delay(write=False) == 0
