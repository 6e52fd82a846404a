"""Nothing a test starts outlives the session: the suite's hooks (imported by
``tests/conftest.py``; ``-p tests.hygiene`` loads them in a session of its own).

* SIGTERM interrupts the session as Ctrl-C does (Python would otherwise die at once and
  leave behind what the tests started): the test in flight is interrupted, fixtures are
  torn down, the process groups of ``tests.processes`` are ended. Under xdist the
  controller passes it on to its workers as SIGINT, as a terminal does.
* At the end of the session, in each process (each xdist worker, and the controller or
  the only process): a thread other than the main one that is not a daemon, a live
  child process, or a process group that ``tests.processes`` started and nobody ended,
  FAILS the session (the last test's teardown errs, naming them); the groups are ended
  first. The controller also ends, and fails on, any group a worker left (a worker that
  died without its teardown).
"""

from __future__ import annotations

import gc
import os
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from tests import processes

REGISTRY_ENV = "PROMOTER_TEST_GROUPS"
"""The session's directory of process groups, which its xdist workers inherit."""
SETTLE_ENV = "PROMOTER_TEST_SETTLE"
SETTLE = float(os.environ.get(SETTLE_ENV, "15"))
"""Seconds the end-of-session check waits for threads and processes that are on their
way out (a runtime's stopped threads, a mirror's ``cat-file`` closing) before it fails."""


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _interrupt(config: pytest.Config) -> None:
    """SIGTERM: interrupt as Ctrl-C does; the controller passes SIGINT to its workers."""

    controller = not _is_worker(config) and bool(config.getoption("numprocesses", None))

    def handler(signum: int, frame: FrameType | None) -> None:
        if controller:  # its children are its workers
            for pid in processes.children(os.getpid()):
                try:
                    os.kill(pid, signal.SIGINT)
                except ProcessLookupError:
                    continue
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, handler)


def pytest_configure(config: pytest.Config) -> None:
    if _is_worker(config):
        directory = os.environ[REGISTRY_ENV]
    else:  # a session of its own, even one a test started: a directory of its own
        directory = tempfile.mkdtemp(prefix="promoter-test-groups-")
        os.environ[REGISTRY_ENV] = directory  # the workers inherit it
    processes.registry = Path(directory)
    _interrupt(config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (or the only process): a group that a worker started and left (a
    worker that died) is ended here, and fails the session."""
    if _is_worker(session.config) or processes.registry is None:
        return
    left = processes.end_registered(processes.registry)
    if left:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print("\nprocess groups left by the tests, ended now:\n  " + "\n  ".join(left))
    if processes.registry.is_dir() and not any(processes.registry.iterdir()):
        processes.registry.rmdir()


@pytest.fixture(autouse=True)
def _runtimes_stopped(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every daemon runtime a test builds is stopped after it, started or not: its delivery
    log's thread, its plugins' processes and its mirrors' ``cat-file`` end with the test,
    not with the session. A runtime is held until it is stopped, by the test or here, and
    let go then, so a test can see a stopped and dropped daemon freed."""
    from promoter.daemon import Runtime

    unstopped: dict[int, Runtime] = {}
    real_init, real_stop = Runtime.__init__, Runtime.stop

    def init(self: Runtime, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        unstopped[id(self)] = self

    def stop(self: Runtime, *args: Any, **kwargs: Any) -> Any:
        unstopped.pop(id(self), None)
        return real_stop(self, *args, **kwargs)

    monkeypatch.setattr(Runtime, "__init__", init)
    monkeypatch.setattr(Runtime, "stop", stop)
    yield
    for runtime in list(unstopped.values()):
        runtime.stop()


def leftovers() -> list[str]:
    """What this process still runs that a test started: threads that are not daemons
    (but the main one), live child processes, groups of ``tests.processes`` not ended."""
    threads = [
        f"thread {t.name}"
        for t in threading.enumerate()
        if not t.daemon and t is not threading.main_thread() and t.is_alive()
    ]
    children = [f"child {pid}: {cmd}" for pid, cmd in processes.children(os.getpid()).items()]
    groups = [
        f"process group {pgid}: {cmd}"
        for pgid, cmd in processes.started_groups().items()
        if processes.group_alive(pgid)
    ]
    return [*threads, *children, *groups]


@pytest.fixture(autouse=True, scope="session")
def _nothing_left_behind() -> Iterator[None]:
    """Fails the session's last teardown in this process when a test left something
    running (see the module)."""
    yield
    gc.collect()  # what only garbage holds (a dropped plugin, a mirror) ends its children
    deadline = time.monotonic() + SETTLE
    left = leftovers()
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = leftovers()
    processes.end_all()
    assert not left, "left running at the end of the session:\n  " + "\n  ".join(left)
