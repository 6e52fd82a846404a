"""A credential's budget at its edges: the last request the SCM reports left, the reserve
of each class in every limit, the share of a replica, a call held in its thread until room
comes back, the spacing of refused calls, what an error answer teaches it, and its tickets
and counters."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from scm_plugins.budget import Cost, CredentialBudget, Limits, Priority, Throttled, Ticket
from scm_plugins.github.limits import GITHUB_LIMITS
from tests.unit.test_credential_budget import EPOCH, ROOMY, SMALL, budget, call

MERGE = Cost(Priority.MERGE)
READ = Cost(Priority.READ)


class WatchedClock:
    """A fake clock that counts its reads, so a test knows when a call in another thread
    has read the time (and holds the budget's lock, deciding whether to wait)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.reads = 0
        self._read = threading.Condition()

    def __call__(self) -> float:
        with self._read:
            self.reads += 1
            self._read.notify_all()
            return self.now

    def wall(self) -> float:
        return EPOCH + self.now

    def wait_for_reads(self, reads: int) -> None:
        with self._read:
            assert self._read.wait_for(lambda: self.reads >= reads, timeout=10.0)


class Admission:
    """One ``admit`` running in its own thread, started once it has read the clock twice
    (when it started, then the time it decides on, under the budget's lock)."""

    def __init__(self, b: CredentialBudget, clock: WatchedClock, cost: Cost) -> None:
        self.ticket: Ticket | None = None
        self.refused: Throttled | None = None
        before = clock.reads
        self._thread = threading.Thread(target=self._run, args=(b, cost), daemon=True)
        self._thread.start()
        clock.wait_for_reads(before + 2)

    def _run(self, b: CredentialBudget, cost: Cost) -> None:
        try:
            self.ticket = b.admit(cost)
        except Throttled as exc:
            self.refused = exc

    def result(self) -> Ticket:
        """The admitted ticket; fails if the call was refused or is still waiting."""
        self._thread.join(timeout=10.0)
        assert not self._thread.is_alive(), "admit still waits"
        assert self.refused is None
        assert self.ticket is not None
        return self.ticket


def watched(limits: Limits) -> tuple[CredentialBudget, WatchedClock]:
    clock = WatchedClock()
    return CredentialBudget(limits, clock=clock, wall=clock.wall), clock


def headers(remaining: int, *, limit: int = 100, reset_in: float = 40.0) -> dict[str, str]:
    return {
        "x-ratelimit-limit": str(limit),
        "x-ratelimit-remaining": str(remaining),
        "x-ratelimit-reset": str(int(EPOCH + reset_in)),
    }


def admitted_at_once(b: CredentialBudget, cost: Cost, most: int = 1000) -> int:
    """How many calls of ``cost`` go now (each ended at once, teaching the budget nothing)."""
    return until_refused(b, cost, most)[0]


def until_refused(b: CredentialBudget, cost: Cost, most: int = 1000) -> tuple[int, Throttled]:
    """Calls of ``cost`` (each ended at once) until one is refused: how many went, and
    the refusal."""
    admitted = 0
    with pytest.raises(Throttled) as refused:
        for _ in range(most):
            b.admit(cost).close()
            admitted += 1
    return admitted, refused.value


def refusals(b: CredentialBudget, cost: Cost, count: int) -> list[Throttled]:
    refused = []
    for _ in range(count):
        with pytest.raises(Throttled) as exc:
            b.admit(cost)
        refused.append(exc.value)
    return refused


# --- the primary limit the SCM reports -------------------------------------------------


def test_the_last_request_the_scm_reports_left_goes_and_the_next_waits_for_the_reset() -> None:
    b, _ = budget(ROOMY)
    call(b, MERGE, 200, headers(1))
    last = b.admit(MERGE)  # one left: it goes
    with pytest.raises(Throttled) as refused:
        b.admit(MERGE)  # the one in flight spends it
    assert refused.value.limit == "primary"
    last.close()
    b.admit(MERGE)


def test_reads_leave_the_last_tenth_the_scm_reports_to_merges() -> None:
    b, _ = budget(ROOMY)
    call(b, MERGE, 200, headers(10))  # of 100: a read leaves 10
    with pytest.raises(Throttled) as refused:
        b.admit(READ)
    assert refused.value.limit == "primary"
    b.admit(MERGE)


def test_a_replica_counts_its_share_of_what_the_scm_reports_left() -> None:
    b, _ = budget(ROOMY)
    b.share(0.5)
    call(b, MERGE, 200, headers(2))
    b.admit(MERGE).close()  # half of 2: one
    call(b, MERGE, 200, headers(1))
    with pytest.raises(Throttled) as refused:
        b.admit(MERGE)  # half of 1: none
    assert refused.value.limit == "primary"


def test_an_exhausted_primary_limit_is_waited_out_with_a_twentieth_of_a_minute_to_spare() -> None:
    b, _ = budget(replace(GITHUB_LIMITS, max_wait=0.0))
    call(b, MERGE, 200, headers(0, limit=5000))
    with pytest.raises(Throttled) as refused:
        b.admit(MERGE)
    assert refused.value.retry_after == pytest.approx(40.0 + 0.05 * 60.0)


def test_refused_calls_of_a_replica_come_back_spread_over_its_share_of_the_limit() -> None:
    b, _ = budget(ROOMY)
    b.share(0.5)
    call(b, MERGE, 200, headers(0))
    waits = [r.retry_after for r in refusals(b, MERGE, 3)]
    spacing = SMALL.window / (100 * 0.5)  # the replica's 50 calls a window
    first = 40.0 + SMALL.slack * SMALL.minute
    assert waits == pytest.approx([first, first + spacing, first + 2 * spacing])


def test_a_replicas_bucket_holds_and_refills_its_share_of_the_primary_limit() -> None:
    b, _ = budget(replace(ROOMY, window=100.0, primary=1000))  # 10 a second
    b.share(0.5)
    admitted, refused = until_refused(b, MERGE)
    assert admitted == 50  # a tenth of its 500
    assert refused.retry_after == pytest.approx(1 / 5)  # 5 a second


def test_a_bucket_of_a_small_limit_holds_one_call_however_long_it_rests() -> None:
    b, clock = budget(replace(ROOMY, primary=10))  # a tenth of 10: one
    assert admitted_at_once(b, MERGE) == 1
    clock.now += 10 * SMALL.window
    assert admitted_at_once(b, MERGE) == 1


# --- what an answer teaches the budget -------------------------------------------------


def test_an_error_answer_without_rate_limit_headers_does_not_lift_the_primary_limit() -> None:
    b, _ = budget(ROOMY)
    for status in (400, 404):
        b.admit(MERGE).answered(status, {"Content-Type": "application/json"})
    assert not b.primary.unlimited
    assert admitted_at_once(b, MERGE) == 8  # the bucket of 10, less the two answered
    assert b.primary.remaining is None


def test_a_rate_limited_answers_headers_are_learnt_in_any_case() -> None:
    b, clock = budget(ROOMY)
    spent = {k.upper(): v for k, v in headers(0).items()}
    b.admit(MERGE).answered(403, spent)
    assert b.primary.remaining == 0
    with pytest.raises(Throttled) as refused:
        b.admit(MERGE)
    assert refused.value.limit == "primary"
    clock.now += 40.0 + SMALL.slack * SMALL.minute
    b.admit(MERGE)


def test_a_304_to_a_plain_read_refunds_exactly_the_one_token_it_took() -> None:
    b, _ = budget(ROOMY)  # a bucket of 10
    for _ in range(9):
        call(b, MERGE)
    call(b, MERGE, 304)
    assert admitted_at_once(b, MERGE) == 1


# --- each class's reserve and a replica's share of the secondary limits ----------------


def test_reads_leave_a_tenth_of_the_places_in_flight_to_merges() -> None:
    b, _ = budget(replace(ROOMY, concurrent=10, primary=1000))
    held = [b.admit(READ) for _ in range(9)]
    with pytest.raises(Throttled) as refused:
        b.admit(READ)
    assert refused.value.limit == "concurrency"
    held.append(b.admit(MERGE))
    assert b.in_flight() == 10


def test_a_replica_has_its_share_of_the_places_in_flight_and_at_least_one() -> None:
    b, _ = budget(replace(ROOMY, concurrent=10, primary=10_000))
    b.share(0.5)
    held = [b.admit(MERGE) for _ in range(5)]
    assert refusals(b, MERGE, 1)[0].limit == "concurrency"
    for ticket in held:
        ticket.close()
    b.share(0.01)
    held = [b.admit(MERGE)]
    assert refusals(b, MERGE, 1)[0].limit == "concurrency"


def test_a_share_above_the_whole_credential_counts_as_the_whole() -> None:
    b, _ = budget(ROOMY)
    b.share(1.5)
    assert b.current_share == 1.0
    held = [b.admit(MERGE) for _ in range(ROOMY.concurrent)]
    assert refusals(b, MERGE, 1)[0].limit == "concurrency"
    assert len(held) == 3


def test_a_tiny_share_of_each_window_still_lets_one_call_through() -> None:
    roomy = replace(ROOMY, primary=100_000, points_per_minute=20)
    content = Cost(Priority.MERGE, content=True)
    for limits, cost, limit in (
        (roomy, MERGE, "points"),
        (replace(roomy, points_per_minute=1000, content_per_window=1000), content, "content"),
        (replace(roomy, points_per_minute=1000, content_per_minute=1000), content, "content"),
    ):
        b, _ = budget(limits)
        b.share(0.01)
        admitted, refused = until_refused(b, cost)
        assert (admitted, refused.limit) == (1, limit)


def test_a_replica_makes_its_share_of_the_content_a_minute_allows() -> None:
    b, _ = budget(replace(ROOMY, content_per_minute=4, content_per_window=100))
    b.share(0.5)
    assert admitted_at_once(b, Cost(Priority.MERGE, content=True)) == 2


def test_content_creation_pays_points_as_well() -> None:
    b, _ = budget(SMALL)  # 20 points a minute
    for _ in range(4):
        call(b, Cost(Priority.MERGE, points=5))
    with pytest.raises(Throttled) as refused:
        b.admit(Cost(Priority.MERGE, points=5, content=True))
    assert refused.value.limit == "points"


def test_a_call_short_of_points_and_of_places_is_refused_for_the_points() -> None:
    b, _ = budget(SMALL)  # 3 in flight, 20 points
    held = [b.admit(Cost(Priority.MERGE, points=5)) for _ in range(3)]
    with pytest.raises(Throttled) as refused:
        b.admit(Cost(Priority.MERGE, points=10))
    assert refused.value.limit == "points"
    assert refused.value.retry_after == pytest.approx(SMALL.minute * (1 + SMALL.slack))
    assert len(held) == 3


# --- when refused calls come back ------------------------------------------------------


def test_calls_refused_for_a_place_in_flight_come_back_in_a_second_of_the_hour() -> None:
    b, _ = budget(replace(GITHUB_LIMITS, concurrent=1, max_wait=0.0))
    held = b.admit(MERGE)
    waits = [r.retry_after for r in refusals(b, MERGE, 2)]
    assert waits == [60.0 / 60.0, 60.0 / 60.0]  # a place comes back when any call ends
    held.close()


def test_reads_refused_for_points_come_back_when_their_reserve_is_free_again() -> None:
    b, _ = budget(replace(SMALL, primary=100_000))  # 20 points; reads leave 2
    for _ in range(18):
        call(b, READ)
    assert refusals(b, READ, 1)[0].retry_after == pytest.approx(SMALL.minute * 1.05)


def test_refused_calls_past_a_windows_size_come_back_spread_by_their_points() -> None:
    b, clock = budget(replace(SMALL, primary=100_000))  # 20 points a (held) minute
    for _ in range(4):
        call(b, Cost(Priority.MERGE, points=5))
        clock.now += 0.1
    clock.now = 0.5
    waits = [r.retry_after for r in refusals(b, Cost(Priority.MERGE, points=5), 5)]
    span = SMALL.minute * 1.05
    due = [t + span - 0.5 for t in (0.0, 0.1, 0.2, 0.3)]
    spacing = span / 20 * 5
    assert waits == pytest.approx([*due, due[0] + 4 * spacing])


def test_a_call_that_never_fits_a_window_comes_back_in_a_minute() -> None:
    b, _ = budget(SMALL)
    refused = refusals(b, Cost(Priority.MERGE, points=25), 1)[0]
    assert refused.limit == "points"
    assert refused.retry_after == SMALL.minute


def test_a_slot_given_for_now_is_over_and_the_next_refused_call_is_first_again() -> None:
    b, clock = budget(SMALL)  # a bucket of 10; reads leave 1
    for _ in range(9):
        b.admit(READ).close()
    first = refusals(b, READ, 1)[0].retry_after
    clock.now = first  # its slot comes, and a merge takes the room
    b.admit(MERGE).close()
    assert refusals(b, READ, 1)[0].retry_after == pytest.approx(first)


def test_refusals_are_counted_by_class() -> None:
    b, _ = budget(replace(SMALL, concurrent=1))
    held = b.admit(MERGE)
    refusals(b, READ, 2)
    refusals(b, MERGE, 1)
    assert b.stats.throttled == {"read": 2, "merge": 1}
    held.close()


def test_a_refusal_says_which_limit_and_when_to_come_back() -> None:
    assert str(Throttled(1.234, "points")) == "the points limit has no room for 1.23 s"


# --- a call held in its thread ---------------------------------------------------------


def test_a_merge_waits_for_a_place_in_flight_that_frees_sooner_than_its_wait() -> None:
    b, clock = watched(replace(GITHUB_LIMITS, concurrent=1, max_wait=0.5))
    held = b.admit(MERGE)
    waiting = Admission(b, clock, MERGE)
    clock.now += 0.0005
    held.close()
    waiting.result().close()
    assert b.stats.admitted == 2
    assert b.stats.waited == 0  # half a millisecond is no wait


def test_a_call_waits_for_room_due_exactly_at_its_deadline_and_the_waits_add_up() -> None:
    limits = replace(ROOMY, window=10.0, primary=10, max_wait=1.0)  # one token a second
    b, clock = watched(limits)
    held = b.admit(MERGE)  # the bucket's only token
    for _ in range(2):
        waiting = Admission(b, clock, MERGE)  # due in 1 s, its deadline
        clock.now += 1.0
        held.close()  # wakes it
        held = waiting.result()
    held.close()
    assert (b.stats.waited, b.stats.waited_s, b.stats.longest_wait_s) == (2, 2.0, 1.0)


# --- tickets and scaled limits ---------------------------------------------------------


def test_a_ticket_gives_its_place_back_once_however_it_ends() -> None:
    b, _ = budget(ROOMY)
    closed = b.admit(MERGE)
    closed.close()
    assert b.in_flight() == 0
    closed.close()
    closed.answered(200, {})
    assert b.in_flight() == 0
    answered = b.admit(MERGE)
    answered.answered(200, {})
    answered.answered(200, {})
    answered.close()
    assert b.in_flight() == 0
    held = [b.admit(MERGE) for _ in range(ROOMY.concurrent)]
    assert refusals(b, MERGE, 1)[0].limit == "concurrency"
    assert len(held) == 3


def test_scaled_limits_run_the_window_and_the_wait_in_a_thread_faster_alike() -> None:
    scaled = GITHUB_LIMITS.scaled(60.0)
    assert scaled == replace(GITHUB_LIMITS, window=60.0, max_wait=2.0 / 60.0)
    assert GITHUB_LIMITS.window == 3600.0
