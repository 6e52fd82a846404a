"""What a worker waits on: named once its reconcile runs long, never for another thread's call."""

from __future__ import annotations

import threading

from promoter.activity import SLOW, Activity


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_long_reconcile_names_the_call_it_waits_on_and_what_came_before() -> None:
    clock = Clock()
    activity = Activity(clock=clock)
    with activity.working("guestbook"):
        with activity.calling("forgejo", "find_pull_request"):
            clock.now += 1.5
        assert activity.waiting("guestbook") is None  # quick so far
        with activity.calling("forgejo", "get_commit_statuses"):
            clock.now += SLOW
            waiting = activity.waiting("guestbook")
        assert waiting is not None
        assert "waiting on a slow SCM call: forgejo get_commit_statuses for 2.0 s" in waiting
        assert "1 SCM call(s) took 1.5 s" in waiting
        assert activity.waiting("guestbook") == "reconciling for 4 s; 2 SCM call(s) took 3.5 s"
    assert activity.waiting("guestbook") is None


def test_a_call_made_outside_a_reconcile_is_not_recorded() -> None:
    clock = Clock()
    activity = Activity(clock=clock)
    seen: list[str | None] = []

    def api_call() -> None:
        with activity.calling("forgejo", "set_commit_status"):
            clock.now += 10
            seen.append(activity.waiting("guestbook"))

    with activity.working("guestbook"):
        thread = threading.Thread(target=api_call)
        thread.start()
        thread.join()
        idle = "reconciling for 10 s; 0 SCM call(s) took 0.0 s"
        assert seen == [idle]  # the other thread's call is not this reconcile's
        assert activity.waiting("guestbook") == idle


def test_an_scm_call_never_waits_for_a_reader_of_the_activity() -> None:
    """Every SCM call of every worker passes through ``calling``: it takes no lock, so a
    reader of the activity (the API, the dashboard) cannot hold a worker up."""
    clock = Clock()
    activity = Activity(clock=clock)
    registered, go, called = threading.Event(), threading.Event(), threading.Event()

    def reconcile() -> None:
        with activity.working("guestbook"):
            registered.set()
            go.wait(timeout=5)
            with activity.calling("forgejo", "find_pull_request"):
                clock.now += SLOW
                called.set()

    worker = threading.Thread(target=reconcile)
    worker.start()
    assert registered.wait(timeout=30)
    with activity._lock:  # a reader in the middle of ``waiting``
        go.set()
        assert called.wait(timeout=30)
    worker.join()
    assert activity.waiting("guestbook") is None
