"""The workers schedule what follows a reconcile: a rate limit's Retry-After is kept however
often the strategy is added meanwhile, other temporary errors back off no less than the
delay they name, and a reconcile that asks to be requeued is."""

from __future__ import annotations

import pytest

from promoter.daemon.acting.executor import Outcome
from promoter.daemon.loop.queue import WorkQueue
from promoter.daemon.loop.workers import Workers
from promoter.errors import RateBudgetWait, ScmBusy, ScmRateLimited, ScmUnavailable


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def failing_once(error: Exception) -> tuple[list[str], Workers, WorkQueue, Clock]:
    """Workers whose first reconcile raises ``error`` and the later ones succeed."""
    calls: list[str] = []

    def reconcile(key: str) -> Outcome:
        calls.append(key)
        if len(calls) == 1:
            raise error
        return Outcome()

    clock = Clock()
    queue = WorkQueue(base_delay=1.0, max_delay=300.0, clock=clock)
    return calls, Workers(queue, reconcile, count=0), queue, clock


@pytest.mark.parametrize(
    "error",
    [
        ScmRateLimited("GitHub answered 429", retry_after=30.0),
        RateBudgetWait("the credential's budget is spent", retry_after=30.0),
    ],
    ids=["the SCM's rate limit", "our own budget"],
)
def test_a_rate_limited_strategy_waits_its_retry_after_even_when_a_webhook_adds_it(
    error: Exception,
) -> None:
    _, workers, queue, clock = failing_once(error)
    workers.process("guestbook")
    queue.add("guestbook", unpark=True)  # a webhook about the strategy
    assert queue.get(timeout=0) is None
    clock.now = 29.9
    queue.add("guestbook")
    assert queue.get(timeout=0) is None
    clock.now = 30.0
    assert queue.get(timeout=0) == "guestbook"


def test_a_temporary_error_backs_off_no_less_than_the_delay_it_names() -> None:
    _, workers, queue, clock = failing_once(ScmUnavailable("GitHub answered 502", delay=20.0))
    workers.process("guestbook")
    queue.add_many(["guestbook"], soft=True)  # the periodic resync
    clock.now = 19.9
    assert queue.get(timeout=0) is None
    clock.now = 20.0
    assert queue.get(timeout=0) == "guestbook"


def test_a_locked_branch_is_tried_again_when_its_lock_can_be_cleared_not_at_the_backoff() -> None:
    """After eight failures the backoff is 256 s; a lock that is taken as abandoned in
    12 s is tried again then."""
    _, workers, queue, clock = failing_once(ScmBusy("environment/prod is locked", delay=12.0))
    for _ in range(8):  # the strategy failed eight times already
        queue.backoff("guestbook")
    workers.process("guestbook")
    clock.now = 11.9
    assert queue.get(timeout=0) is None
    clock.now = 12.0
    assert queue.get(timeout=0) == "guestbook"


def test_a_crash_is_retried_after_a_backoff_and_a_success_resets_it() -> None:
    calls, workers, queue, clock = failing_once(RuntimeError("a bug"))
    workers.process("guestbook")
    assert queue.get(timeout=0) is None
    clock.now = 1.0  # the first backoff: base_delay
    assert queue.get(timeout=0) == "guestbook"
    workers.process("guestbook")
    queue.done("guestbook")
    assert calls == ["guestbook", "guestbook"]
    assert queue.backoff("guestbook") == 1.0  # forgotten after the success


def test_a_reconcile_that_asks_to_be_requeued_runs_again_after_that_delay() -> None:
    clock = Clock()
    queue = WorkQueue(clock=clock)
    Workers(queue, lambda key: Outcome(requeue_after=45.0), count=0).process("guestbook")
    clock.now = 44.9
    assert queue.get(timeout=0) is None
    clock.now = 45.0
    assert queue.get(timeout=0) == "guestbook"
