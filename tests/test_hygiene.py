"""Nothing a test starts outlives it: a session of its own (``pytest -p tests.hygiene``)
runs a test that starts a process group, and is stopped by pytest-timeout, by SIGTERM or
by SIGINT, in one process or under xdist; the group is gone after. A session that leaves
a thread, a child process or a group running fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import processes
from tests.support import wait_for

pytestmark = pytest.mark.timeout(900)  # a session of its own per test, on a loaded machine

ROOT = Path(__file__).resolve().parents[1]
SLEEPER = (
    "import subprocess, sys, time\n"
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "time.sleep(600)\n"
)
"""A process that starts a child and sleeps, as a benchmark starts its servers."""

HANGING = """
import os, sys, time
from pathlib import Path

import pytest

from tests import processes

SLEEPER = {sleeper!r}


def started() -> int:
    proc = processes.start([sys.executable, "-c", SLEEPER])
    Path(os.environ["GROUPS_SEEN"], str(proc.pid)).write_text("")
    return proc.pid


def test_one_hangs_with_a_group() -> None:
    started()
    time.sleep(600)


def test_two_hangs_with_a_group() -> None:
    started()
    time.sleep(600)


@pytest.mark.timeout(5)
def test_a_run_that_outlasts_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    real = processes.start

    def recorded(args, **popen):
        proc = real(args, **popen)
        Path(os.environ["GROUPS_SEEN"], str(proc.pid)).write_text("")
        return proc

    monkeypatch.setattr(processes, "start", recorded)
    processes.run([sys.executable, "-c", SLEEPER], timeout=600)
"""


@pytest.fixture
def seen(tmp_path: Path) -> Iterator[Path]:
    """Where the inner session writes the group ids it starts; they are ended after the
    test, whatever happened (a group left would otherwise outlive this test too)."""
    directory = tmp_path / "groups"
    directory.mkdir()
    yield directory
    for entry in directory.iterdir():
        processes.end(int(entry.name))


def inner(tmp_path: Path, seen: Path, *args: str) -> subprocess.Popen[bytes]:
    test = tmp_path / "test_inner.py"
    test.write_text(textwrap.dedent(HANGING.format(sleeper=SLEEPER)))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PROMOTER_TEST"))}
    env.update({"GROUPS_SEEN": str(seen), "PYTHONPATH": str(ROOT), "PROMOTER_TEST_SETTLE": "2"})
    command = [sys.executable, "-m", "pytest", "-p", "tests.hygiene", "-p", "no:cacheprovider"]
    command += ["-q", "--rootdir", str(tmp_path), "-o", "timeout=0", str(test), *args]
    log = (tmp_path / "inner.log").open("wb")
    try:
        return processes.start(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    finally:
        log.close()


def groups(seen: Path, count: int) -> list[int]:
    wait_for(lambda: len(list(seen.iterdir())) >= count, timeout=600, what="the groups started")
    found = [int(entry.name) for entry in seen.iterdir()]
    assert all(processes.group_alive(g) for g in found)
    return found


def stopped(session: subprocess.Popen[bytes], tmp_path: Path) -> str:
    """The inner session's exit code and output, once it exited on its own."""
    try:
        code = session.wait(timeout=600)
    finally:
        processes.end(session)
    return f"exit {code}:\n{(tmp_path / 'inner.log').read_text(errors='replace')[-3000:]}"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_session_stopped_mid_test_ends_the_process_group_the_test_started(
    tmp_path: Path, seen: Path, signum: int
) -> None:
    session = inner(tmp_path, seen, "-k", "one_hangs")
    [group] = groups(seen, 1)
    os.kill(session.pid, signum)  # the session alone, not its group: as a CI runner does
    said = stopped(session, tmp_path)
    assert "KeyboardInterrupt" in said, said
    assert not processes.group_alive(group), said


def test_an_xdist_session_stopped_by_sigterm_ends_the_groups_of_every_worker(
    tmp_path: Path, seen: Path
) -> None:
    session = inner(tmp_path, seen, "-n", "2", "-k", "hangs_with_a_group")
    started = groups(seen, 2)
    os.kill(session.pid, signal.SIGTERM)
    said = stopped(session, tmp_path)
    assert [g for g in started if processes.group_alive(g)] == [], said


def test_a_run_stopped_by_pytest_timeout_ends_its_whole_group(tmp_path: Path, seen: Path) -> None:
    session = inner(tmp_path, seen, "-k", "outlasts")
    [group] = groups(seen, 1)
    said = stopped(session, tmp_path)
    assert "Timeout" in said and "1 failed" in said, said
    assert not processes.group_alive(group), said


LEAVING = """
import subprocess, sys, threading


def test_leaves_a_thread_and_a_child_running() -> None:
    threading.Thread(target=threading.Event().wait, args=(20,), name="left-thread").start()
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
"""


def test_a_session_that_leaves_a_thread_or_a_child_running_fails(tmp_path: Path) -> None:
    test = tmp_path / "test_leaving.py"
    test.write_text(LEAVING)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PROMOTER_TEST"))}
    env.update({"PYTHONPATH": str(ROOT), "PROMOTER_TEST_SETTLE": "1"})
    command = [sys.executable, "-m", "pytest", "-p", "tests.hygiene", "-p", "no:cacheprovider"]
    command += ["-q", "--rootdir", str(tmp_path), "-o", "timeout=0", str(test)]
    with processes.started(command, cwd=ROOT, env=env, stdout=subprocess.PIPE) as session:
        out, _ = session.communicate(timeout=300)  # once the thread ended, 20 s on
    said = out.decode(errors="replace")
    assert session.returncode == 1, said
    assert "left running at the end of the session" in said, said
    assert "thread left-thread" in said and "time.sleep(600)" in said, said
