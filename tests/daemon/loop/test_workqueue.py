"""The work queue: dedupe, exclusive keys, delays, backoff and retry-after."""

from __future__ import annotations

import threading
import time

import pytest

from promoter.daemon.loop.queue import ShutDown, WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_key_added_twice_while_waiting_is_handed_out_once() -> None:
    q = WorkQueue()
    q.add("a")
    q.add("a")
    q.add("b")
    assert [q.get(0), q.get(0), q.get(0)] == ["a", "b", None]


def test_a_key_added_while_processing_is_not_handed_to_a_second_worker() -> None:
    q = WorkQueue()
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    assert q.get(0) is None
    q.done("a")
    assert q.get(0) == "a"


def test_a_delayed_key_waits_for_its_time_and_an_earlier_add_wins() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add_after("a", 10)
    assert q.get(0) is None
    clock.now += 10
    assert q.get(0) == "a"
    q.done("a")
    q.add_after("b", 10)
    q.add("b")
    assert q.get(0) == "b"


def test_waiting_counts_ready_and_delayed_keys_and_idle_ignores_delayed_ones() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add("a")
    q.add_after("b", 10)
    assert (q.waiting(), q.idle()) == (2, False)
    assert q.get(0) == "a"
    assert (q.waiting(), q.idle()) == (1, False)
    q.done("a")
    assert (q.waiting(), q.idle()) == (1, True)
    clock.now += 10
    assert q.get(0) == "b"
    q.done("b")
    assert (q.waiting(), q.idle()) == (0, True)


def test_next_due_is_the_soonest_delayed_key_and_none_without_one() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    assert q.next_due() is None
    q.add_after("a", 30)
    q.add_after("b", 10)
    q.add_after("b", 20)  # a later requeue does not put a due key off
    assert q.next_due() == 10
    clock.now += 12
    assert q.next_due() == 0.0  # overdue until a worker asks for it
    assert q.get(0) == "b"
    assert q.next_due() == 18
    q.done("b")
    clock.now += 18
    assert q.get(0) == "a"
    assert q.next_due() is None


def test_backoff_doubles_and_is_capped_and_forget_resets_it() -> None:
    q = WorkQueue(base_delay=1, max_delay=5)
    assert [q.backoff("k") for _ in range(5)] == [1, 2, 4, 5, 5]
    q.forget("k")
    assert q.backoff("k") == 1


def test_a_key_under_retry_after_is_not_handed_out_early_even_when_added_again() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add("a")
    assert q.get(0) == "a"
    q.not_before("a", 30)
    q.done("a")
    q.add("a")
    clock.now += 29
    assert q.get(0) is None
    clock.now += 1
    assert q.get(0) == "a"


def test_workers_blocked_in_get_leave_on_shutdown() -> None:
    q = WorkQueue()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            q.get()
        except ShutDown as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    time.sleep(0.05)
    q.shutdown()
    for t in threads:
        t.join(30)
    assert len(errors) == 3


def test_many_workers_never_hold_the_same_key_at_once() -> None:
    q = WorkQueue()
    holding: set[str] = set()
    lock = threading.Lock()
    clashes: list[str] = []

    def worker() -> None:
        while True:
            try:
                key = q.get(0.2)
            except ShutDown:
                return
            if key is None:
                return
            with lock:
                if key in holding:
                    clashes.append(key)
                holding.add(key)
            time.sleep(0.001)
            with lock:
                holding.discard(key)
            q.done(key)

    for i in range(300):
        q.add(f"k{i % 7}")
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(300):
        q.add(f"k{i % 7}")
    for t in threads:
        t.join(5)
    assert clashes == []


@pytest.mark.parametrize("delay", [0, -1])
def test_add_after_with_no_delay_is_a_plain_add(delay: float) -> None:
    q = WorkQueue()
    q.add_after("a", delay)
    assert q.get(0) == "a"


def test_a_resync_does_not_cut_a_failure_backoff_short_but_a_webhook_does() -> None:
    now = [0.0]
    queue = WorkQueue(clock=lambda: now[0])
    queue.add_after("app", 30.0, firm=True)  # a failed reconcile's retry
    queue.add_many(["app"], soft=True)  # the periodic resync
    assert queue.get(timeout=0) is None
    queue.add_many(["app"])  # a webhook: something changed, look now
    assert queue.get(timeout=0) == "app"


def test_a_soft_add_runs_a_key_that_is_not_backing_off() -> None:
    queue = WorkQueue()
    queue.add_many(["app"], soft=True)
    assert queue.get(timeout=0) == "app"


def test_a_delayed_key_added_at_once_no_longer_counts_as_waiting() -> None:
    queue = WorkQueue()
    queue.add_after("a", 300.0)
    assert queue.waiting() == 1
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    assert queue.waiting() == 0


def test_spread_keys_come_one_step_apart_and_a_webhook_is_not_queued_behind_them() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add_spread([f"s{i}" for i in range(100)], 300.0)  # the first at once, then every 3 s
    q.add("webhook")
    assert [q.get(0), q.get(0), q.get(0)] == ["s0", "webhook", None]
    clock.now += 3.0
    assert [q.get(0), q.get(0)] == ["s1", None]
    clock.now += 294.0
    assert sum(1 for _ in iter(lambda: q.get(0), None)) == 98
    assert q.waiting() == 0


def test_a_spread_key_added_at_once_is_handed_out_once_and_start_delays_the_first() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add_spread(["a", "b"], 10.0, start=1)  # at 5 s and 10 s
    assert q.get(0) is None
    q.add("b")  # a webhook brings it forward
    assert q.get(0) == "b"
    q.done("b")
    clock.now += 10.0
    assert [q.get(0), q.get(0)] == ["a", None]


def test_a_soft_spread_leaves_a_firm_retry_alone() -> None:
    clock = FakeClock()
    q = WorkQueue(clock=clock)
    q.add_after("a", 60.0, firm=True)
    q.add_spread(["a", "b"], 10.0, soft=True)
    assert [q.get(0), q.get(0)] == [None, None]
    clock.now += 5.0
    assert [q.get(0), q.get(0)] == ["b", None]
    clock.now += 55.0
    assert q.get(0) == "a"


def test_a_hurried_key_goes_before_the_backlog_and_a_key_not_ready_is_left_alone() -> None:
    q = WorkQueue()
    q.add_many(["r1", "r2", "r3", "webhook"])
    q.add_after("later", 60.0)
    q.hurry(["webhook", "later", "unknown"])
    assert q.ready() == ["webhook", "r1", "r2", "r3"]
    assert [q.get(0) for _ in range(5)] == ["webhook", "r1", "r2", "r3", None]


def test_a_key_hurried_while_a_worker_has_it_runs_before_the_backlog_when_queued_again() -> None:
    q = WorkQueue()
    q.add("webhook")
    assert q.get(0) == "webhook"  # a worker reconciles it
    q.add_many(["r1", "r2", "r3"])  # the resync's backlog meanwhile
    q.add("webhook")  # a status for it arrives
    q.hurry(["webhook"])
    q.add("plain")  # added while processing too, but not hurried
    assert q.get(0) == "r1"
    q.add("r1")
    q.done("webhook")
    q.done("r1")
    assert q.ready() == ["webhook", "r2", "r3", "plain", "r1"]


def test_urgent_lists_the_hurried_keys_waiting_in_order_until_each_is_handed_out() -> None:
    q = WorkQueue()
    q.add_many(["r1", "a", "r2", "b"])
    q.hurry(["a"])
    q.hurry(["b"])
    assert q.urgent() == ["b", "a"]
    assert q.get(0) == "b"
    assert q.urgent() == ["a"]
    q.add("b")  # added again while processing, not hurried: background
    q.done("b")
    assert q.urgent() == ["a"]
    assert q.get(0) == "a"
    assert q.urgent() == []


def test_a_hurried_key_that_is_dropped_when_its_worker_ends_is_not_urgent_any_more() -> None:
    q = WorkQueue()
    q.add("k")
    assert q.get(0) == "k"
    q.add("k")
    q.hurry(["k"])
    assert q.urgent() == ["k"]  # the worker has it; it will run again
    q.park("k", "permanent error")
    q.done("k")
    assert q.urgent() == []
    assert q.ready() == []


def test_a_key_handed_out_says_whether_it_was_hurried_until_it_is_done() -> None:
    q = WorkQueue()
    q.add_many(["background", "webhook", "later"])
    q.hurry(["webhook"])
    assert q.get(0) == "webhook"
    assert q.hurried("webhook")
    assert q.get(0) == "background"
    assert not q.hurried("background")
    q.add("background")  # a status for it arrives while a worker has it
    q.hurry(["background"])
    assert q.hurried("background")
    q.done("webhook")
    assert not q.hurried("webhook")
    q.done("background")  # queued again, first: hurried until handed out and done
    assert q.get(0) == "background"
    assert q.hurried("background")
    q.done("background")
    assert not q.hurried("background")
