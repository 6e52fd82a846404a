"""The watchdog: a lock held or a git command run past its deadline is logged once, with
the holder's stack, and counted; a non-reentrant lock taken again by its holder raises."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from promoter.git import run_git
from promoter.metrics import sample
from promoter.watchdog import LockReentered, Watchdog, WatchedLock, watch
from tests.support_logs import daemon_logs


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def overdue(kind: str, what: str) -> float:
    return sample("promoter_watchdog_overdue_total", {"kind": kind, "what": what})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@contextmanager
def held_in_thread(lock: WatchedLock) -> Iterator[threading.Thread]:
    """A thread named ``holder`` that holds ``lock`` until the block ends."""
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(60)

    thread = threading.Thread(target=hold, name="holder", daemon=True)
    thread.start()
    assert taken.wait(30)
    try:
        yield thread
    finally:
        release.set()
        thread.join(30)


def test_a_lock_held_past_its_deadline_is_logged_with_its_holders_stack_and_counted_once(
    clock: Clock,
) -> None:
    lock = WatchedLock("test lock", detail="gitops", deadline=60.0, clock=clock)
    dog = Watchdog(clock=clock)
    before = overdue("lock", "test lock")
    with daemon_logs() as out, held_in_thread(lock):
        clock.now += 59.0
        assert dog.check() == []  # within its deadline
        clock.now += 2.0
        [found] = dog.check()
        assert (found.kind, found.what, found.detail) == ("lock", "test lock", "gitops")
        assert found.held == pytest.approx(61.0)
        clock.now += 600.0
        assert dog.check() == []  # the same holding is reported once
    assert overdue("lock", "test lock") == before + 1
    [line] = [json.loads(x) for x in out.getvalue().splitlines() if "deadline" in x]
    assert line["msg"] == "held past its deadline"
    assert (line["holder"], line["detail"], line["deadline_s"]) == ("holder", "gitops", 60.0)
    assert "in hold" in line["stack"] and "release.wait(60)" in line["stack"]


def test_a_lock_taken_anew_after_a_report_is_reported_again_when_overdue(clock: Clock) -> None:
    lock = WatchedLock("again", deadline=1.0, clock=clock)
    dog = Watchdog(clock=clock)
    with held_in_thread(lock):
        clock.now += 2.0
        assert len(dog.check()) == 1
    with held_in_thread(lock):
        clock.now += 2.0
        assert len(dog.check()) == 1


def test_a_git_command_past_its_deadline_is_reported_with_the_thread_running_it(
    clock: Clock, tmp_path: Path
) -> None:
    dog = Watchdog(clock=clock)
    running, release = threading.Event(), threading.Event()

    def slow_git() -> None:
        with watch("git fetch", detail="in mirror gitops", deadline=150.0, clock=clock):
            running.set()
            release.wait(60)

    thread = threading.Thread(target=slow_git, name="promoter-worker-0", daemon=True)
    thread.start()
    assert running.wait(30)
    try:
        clock.now += 151.0
        [found] = dog.check()
        assert (found.kind, found.what, found.thread) == ("git", "git fetch", thread.ident)
    finally:
        release.set()
        thread.join(30)
    clock.now += 600.0
    assert dog.check() == []  # ended: nothing left to report


def test_every_git_command_runs_watched(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import promoter.git.process.runner as runner

    seen: list[tuple[str, str, float]] = []
    real = runner.watch

    def recording(what: str, *, detail: str = "", deadline: float = 0.0) -> object:
        seen.append((what, detail, deadline))
        return real(what, detail=detail, deadline=deadline)

    monkeypatch.setattr(runner, "watch", recording)
    run_git(["--version"], what="checking")
    run_git(["init", "--quiet", str(tmp_path / "r")], timeout=5.0)
    assert seen == [("git", "checking", runner.CALL_DEADLINE), ("git init", "", 5.0 + runner.GRACE)]


def test_a_non_reentrant_lock_taken_again_by_its_holder_raises_at_once() -> None:
    lock = WatchedLock("notes")
    with lock, pytest.raises(LockReentered, match="notes"):
        lock.acquire()
    assert lock.acquire(blocking=False)  # released once: free again
    lock.release()


def test_a_reentrant_lock_is_released_as_many_times_as_it_is_taken() -> None:
    lock = WatchedLock("mirror", reentrant=True)
    other: list[bool] = []
    with lock, lock:
        assert lock.held()
        thread = threading.Thread(target=lambda: other.append(lock.acquire(blocking=False)))
        thread.start()
        thread.join(30)
    assert other == [False] and not lock.held()
    with pytest.raises(RuntimeError):
        lock.release()


def test_the_daemons_watchdog_runs_while_the_runtime_runs(tmp_path: Path) -> None:
    from promoter.wiring import Daemon
    from tests.support import GitOpsRepo, local_config

    runtime = Daemon(local_config(GitOpsRepo.create(tmp_path).path, tmp_path / "state")).runtime
    runtime.start()
    try:
        assert [t.name for t in threading.enumerate()].count("promoter-watchdog") >= 1
    finally:
        runtime.stop()
    assert runtime.watchdog._thread is None
