"""A credential's budget: every limit holds over any window, merges go first, 304s are free,
and a call waits in its thread only briefly."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field, replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scm_plugins.budget import Cost, CredentialBudget, Limits, Priority, Throttled
from scm_plugins.github.limits import GITHUB_LIMITS

SMALL = replace(
    GITHUB_LIMITS,
    window=60.0,
    primary=100,
    concurrent=3,
    points_per_minute=20,
    content_per_minute=3,
    content_per_window=10,
    max_wait=0.0,
)
"""A minute of one second; a call never waits in its thread (admitted or ``Throttled``)."""
ROOMY = replace(SMALL, points_per_minute=1000)
"""The same, with points enough not to matter."""

EPOCH = 1_700_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> float:
        return EPOCH + self.now


@dataclass
class Server:
    """The SCM's side of the primary limit: a window from its first request, 304s free."""

    limit: int
    window: float
    reset: float = 0.0
    used: int = 0
    refused: int = 0
    seen: list[tuple[float, Cost]] = field(default_factory=list)

    def answer(self, wall: float, cost: Cost, status: int) -> dict[str, str]:
        if wall >= self.reset:
            self.reset, self.used = math.ceil(wall + self.window), 0
        if self.used >= self.limit:
            self.refused += 1
        elif status != 304:
            self.used += 1
        self.seen.append((wall, cost))
        return {
            "x-ratelimit-limit": str(self.limit),
            "x-ratelimit-remaining": str(self.limit - self.used),
            "x-ratelimit-reset": str(int(self.reset)),
        }


def budget(limits: Limits = SMALL) -> tuple[CredentialBudget, Clock]:
    clock = Clock()
    return CredentialBudget(limits, clock=clock, wall=clock.wall), clock


def waiting_budget(limits: Limits) -> tuple[CredentialBudget, list[float]]:
    """A budget on a clock that its own waits move: a call that waits ``t`` seconds for
    room moves it by ``t`` at once (one thread: nothing else would wake it). The waits."""
    b, clock = budget(limits)
    waits: list[float] = []

    def wait(timeout: float | None = None) -> bool:
        assert timeout is not None
        waits.append(timeout)
        clock.now += timeout
        return False

    b._cond.wait = wait  # type: ignore[method-assign]
    return b, waits


def call(
    b: CredentialBudget, cost: Cost, status: int = 200, headers: dict[str, str] | None = None
) -> None:
    """One call answered; by default with headers that leave the whole limit."""
    if headers is None:
        limit = str(b.limits.primary)
        reset = str(int(EPOCH + b.limits.window))
        headers = {
            "x-ratelimit-limit": limit,
            "x-ratelimit-remaining": limit,
            "x-ratelimit-reset": reset,
        }
    b.admit(cost).answered(status, headers)


calls = st.lists(
    st.tuples(
        st.floats(min_value=0.0, max_value=2.0),
        st.sampled_from(list(Priority)),
        st.booleans(),  # a write (5 points) or a read
        st.booleans(),  # content-creating (writes only)
        st.sampled_from([200, 304]),
    ),
    min_size=1,
    max_size=150,
)


@given(calls)
def test_no_window_of_any_limit_ever_holds_more_than_the_limit(
    ops: list[tuple[float, Priority, bool, bool, int]],
) -> None:
    b, clock = budget()
    server = Server(SMALL.primary, SMALL.window)
    minute = SMALL.minute
    for dt, priority, write, content, status in ops:
        clock.now += dt
        cost = Cost(priority, 5 if write else 1, content=write and content, revalidation=not write)
        try:
            ticket = b.admit(cost)
        except Throttled as exc:
            assert exc.retry_after > 0
            continue
        ticket.answered(status, server.answer(clock.wall(), cost, status))
    assert server.refused == 0
    seen = server.seen
    for end, _ in seen:
        points = sum(c.points for t, c in seen if end - minute < t <= end)
        assert points <= SMALL.points_per_minute
        made = sum(1 for t, c in seen if c.content and end - minute < t <= end)
        assert made <= SMALL.content_per_minute
        made = sum(1 for t, c in seen if c.content and end - SMALL.window < t <= end)
        assert made <= SMALL.content_per_window


def test_no_more_calls_are_in_flight_than_allowed_and_an_ended_call_makes_room() -> None:
    b, _ = budget()
    held = [b.admit(Cost(Priority.MERGE)) for _ in range(SMALL.concurrent)]
    with pytest.raises(Throttled) as refused:
        b.admit(Cost(Priority.MERGE))
    assert refused.value.limit == "concurrency"
    held[0].answered(200, {})
    b.admit(Cost(Priority.MERGE))


def test_merges_find_room_that_background_reads_may_not_take() -> None:
    b, _ = budget()  # a bucket of 10 tokens; reads leave 1, merges none
    admitted = 0
    with pytest.raises(Throttled) as refused:
        for _ in range(20):
            call(b, Cost(Priority.READ))
            admitted += 1
    assert admitted == 9 and refused.value.limit == "primary"
    call(b, Cost(Priority.MERGE, points=5, content=True))
    with pytest.raises(Throttled):
        call(b, Cost(Priority.MERGE))


def test_content_creation_keeps_room_for_merges_that_openings_may_not_take() -> None:
    limits = replace(GITHUB_LIMITS, max_wait=0.0)
    b, clock = budget(limits)
    opened = 0
    while True:
        clock.now += 1.0
        try:
            call(b, Cost(Priority.WRITE, points=5, content=True), 201)
        except Throttled as exc:
            assert exc.limit == "content"
            break
        opened += 1
    assert opened == 500 - math.floor(500 * 0.05)
    for _ in range(500 - opened):
        clock.now += 1.0
        call(b, Cost(Priority.MERGE, points=5, content=True))
    with pytest.raises(Throttled) as refused:
        call(b, Cost(Priority.MERGE, points=5, content=True))
    assert refused.value.retry_after > 3000  # the first opening leaves the window in an hour


def test_refused_calls_of_one_class_come_back_one_after_another() -> None:
    b, _ = budget()
    for _ in range(9):
        call(b, Cost(Priority.READ))
    waits = []
    for _ in range(3):
        with pytest.raises(Throttled) as refused:
            call(b, Cost(Priority.READ))
        waits.append(refused.value.retry_after)
    spacing = SMALL.window / SMALL.primary
    assert waits == pytest.approx([waits[0], waits[0] + spacing, waits[0] + 2 * spacing])


def test_a_revalidation_answered_304_is_free_and_one_answered_200_pays() -> None:
    b, _ = budget(ROOMY)  # a bucket of 10 tokens; reads leave 1
    for _ in range(100):
        call(b, Cost(Priority.READ, revalidation=True), 304)
    for _ in range(10):
        call(b, Cost(Priority.READ, revalidation=True), 200)
    with pytest.raises(Throttled):
        call(b, Cost(Priority.READ, revalidation=True))


def test_a_304_to_a_plain_read_is_refunded() -> None:
    b, _ = budget(ROOMY)
    for _ in range(50):
        call(b, Cost(Priority.READ), 304)
    assert b.stats.admitted == 50


def test_an_exhausted_primary_limit_waits_for_its_reset() -> None:
    b, clock = budget(replace(SMALL, primary=5000))
    reset = str(int(clock.wall() + 40))
    exhausted = {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "0",
        "x-ratelimit-reset": reset,
    }
    call(b, Cost(Priority.READ), 200, exhausted)
    with pytest.raises(Throttled) as refused:
        call(b, Cost(Priority.MERGE))
    assert refused.value.limit == "primary"
    assert 40 <= refused.value.retry_after <= 41
    clock.now += 40.1
    call(b, Cost(Priority.MERGE))


def test_the_limit_github_states_sizes_the_bucket() -> None:
    b, clock = budget(replace(ROOMY, primary=5000))
    reset = str(int(clock.wall() + 60))
    headers = {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "59", "x-ratelimit-reset": reset}
    call(b, Cost(Priority.MERGE), 200, headers)
    admitted = 0
    with pytest.raises(Throttled):
        for _ in range(100):
            call(b, Cost(Priority.MERGE), 200, headers)  # every answer states the same
            admitted += 1
    assert admitted == 6  # a bucket of 6: a tenth of 60


@pytest.mark.parametrize("limit", [100_000, 10**9])
def test_a_higher_limit_github_states_gives_room_at_once_to_every_class(limit: int) -> None:
    """GitHub Enterprise Server with a higher limit than GitHub's 5,000: the bucket grows
    with the limit its first answer states, as full as it was, so no class waits for the
    larger bucket's reserve to fill (a read waited 18 s at 100,000 and 36 s at 10**9)."""
    b, clock = budget(replace(ROOMY, primary=5000, max_wait=0.0))
    reset = str(int(clock.wall() + 60))
    stated = str(limit)
    headers = {
        "x-ratelimit-limit": stated,
        "x-ratelimit-remaining": stated,
        "x-ratelimit-reset": reset,
    }
    call(b, Cost(Priority.MERGE), 200, headers)
    for priority in Priority:
        call(b, Cost(priority), 200, headers)


def test_answers_without_rate_limit_headers_lift_the_primary_limit_only() -> None:
    b, _ = budget()
    call(b, Cost(Priority.READ), 200, {})
    for _ in range(19):
        call(b, Cost(Priority.MERGE), 200, {})  # past the bucket of 10: no primary limit
    with pytest.raises(Throttled) as refused:
        call(b, Cost(Priority.MERGE), 200, {})
    assert refused.value.limit == "points"


def test_a_call_waits_in_its_thread_for_room_due_soon() -> None:
    limits = replace(SMALL, window=6.0, max_wait=2.0)  # 100 per 6 s
    b, waits = waiting_budget(limits)
    reset = str(int(EPOCH) + 6)
    headers = {
        "x-ratelimit-limit": "100",
        "x-ratelimit-remaining": "100",
        "x-ratelimit-reset": reset,
    }
    for _ in range(10):
        b.admit(Cost(Priority.MERGE)).answered(200, headers)
    assert waits == []
    b.admit(Cost(Priority.MERGE)).answered(200, headers)
    assert b.stats.waited == 1
    assert 0.03 <= sum(waits) <= 0.1  # one token: 60 ms


def test_a_waiting_call_is_woken_when_a_call_ends() -> None:
    limits = replace(SMALL, concurrent=1, max_wait=5.0)
    b = CredentialBudget(limits)
    first = b.admit(Cost(Priority.MERGE))
    admitted = threading.Event()

    def second() -> None:
        b.admit(Cost(Priority.MERGE)).answered(200, {})
        admitted.set()

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.1)
    assert not admitted.is_set()
    first.answered(200, {})
    assert admitted.wait(30)  # woken: it would otherwise wait its 5 s, then be refused
    thread.join()
    assert b.stats.throttled == {}


def test_a_background_read_gives_its_thread_back_sooner_than_a_merge() -> None:
    limits = replace(SMALL, concurrent=1, max_wait=0.4)
    b, waits = waiting_budget(limits)
    b.admit(Cost(Priority.MERGE))
    waited = {}
    for priority in (Priority.READ, Priority.MERGE):
        waits.clear()
        with pytest.raises(Throttled):
            b.admit(Cost(priority))
        waited[priority] = sum(waits)
    assert waited == {Priority.READ: pytest.approx(0.1), Priority.MERGE: pytest.approx(0.4)}


def test_a_tenth_of_the_hour_goes_at_once_and_the_rest_is_spread_evenly() -> None:
    b, _ = budget(replace(ROOMY, window=100.0, primary=1000))
    at_once = 0
    with pytest.raises(Throttled) as refused:
        while True:
            call(b, Cost(Priority.MERGE))
            at_once += 1
    assert at_once == 100
    assert refused.value.retry_after == pytest.approx(100.0 / 1000)  # one call per 0.1 s


def test_content_creation_waits_for_the_minute_while_reads_go_on() -> None:
    b, _ = budget()
    for _ in range(SMALL.content_per_minute):
        call(b, Cost(Priority.MERGE, points=5, content=True))
    with pytest.raises(Throttled) as refused:
        call(b, Cost(Priority.MERGE, points=5, content=True))
    assert refused.value.limit == "content"
    call(b, Cost(Priority.READ))


def test_refused_calls_come_back_as_the_window_frees_room_for_each() -> None:
    b, clock = budget(replace(ROOMY, content_per_minute=100, content_per_window=5))
    for _ in range(5):
        call(b, Cost(Priority.MERGE, points=5, content=True))
        clock.now += 1.0
    clock.now = 10.0
    waits = []
    for _ in range(3):
        with pytest.raises(Throttled) as refused:
            call(b, Cost(Priority.MERGE, points=5, content=True))
        waits.append(refused.value.retry_after)
    held = 60.0 * 1.05  # the window, held 5 % longer than GitHub's
    assert waits == pytest.approx([held - 10, held + 1 - 10, held + 2 - 10])
