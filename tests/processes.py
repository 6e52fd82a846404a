"""Processes a test starts: each in a process group of its own, ended with it.

``start`` runs a command as the leader of a new session and process group; whatever it
starts in turn (a benchmark's API stand-in and replicas, a daemon's git processes) stays
in that group unless it makes a session of its own. ``end`` ends the whole group:
SIGTERM first (a benchmark then ends its own children and says so), SIGKILL for what is
left. ``started`` and ``run`` end it whatever happens to the test: it passes, fails, is
stopped by pytest-timeout (an exception in the test), or is interrupted (SIGINT, or
SIGTERM, which the suite turns into an interrupt: ``tests/conftest.py``).

Every group started is also written down in ``registry`` (a directory the session
shares with its xdist workers): at the end of the session, a group still alive is
ended and reported, even one whose worker died without ending it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

TERM_GRACE = 10.0
"""Seconds a group is given to end on SIGTERM before SIGKILL."""

_live: dict[int, str] = {}
"""Process group id -> command line, of the groups this process started and not ended."""
_born: dict[int, str] = {}
"""Process group id -> when its leader started (``/proc``'s start time): a group whose
number a new process took once it was gone is not taken for it."""
registry: Path | None = None
"""Where this session writes down the groups it starts (set by ``tests/conftest.py``)."""


def start(args: Sequence[str], **popen: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **popen)`` as the leader of a new session and group.

    SIGINT reaches it as from a terminal however the suite was started (one started in
    the background of a shell without job control ignores SIGINT, and a child would
    inherit the ignored signal; a handled one is reset to its default in the child)."""
    ignored = (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    )
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc: subprocess.Popen[Any] = subprocess.Popen(args, start_new_session=True, **popen)
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
    _live[proc.pid] = " ".join(str(a) for a in args)
    _born[proc.pid] = _started(proc.pid) or ""
    if registry is not None:
        registry.mkdir(parents=True, exist_ok=True)
        (registry / str(proc.pid)).write_text(f"{_born[proc.pid]}\n{_live[proc.pid]}")
    return proc


def _started(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), or None when it is gone."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def started_groups() -> dict[int, str]:
    """The groups this process started and did not end: group id -> command line."""
    return dict(_live)


def group_alive(pgid: int, born: str | None = None) -> bool:
    """Whether any process of group ``pgid`` still runs (zombies do not count)."""
    return bool(members(pgid, born))


def members(pgid: int, born: str | None = None) -> list[int]:
    """The live processes of the group ``pgid`` that ``start`` made, whose leader started
    at ``born`` (default: as this process saw it start), from ``/proc``. Its session is
    the group's own; and while any process of it lives, its number is nobody else's: a
    process found with that number that started at another time means the group is gone
    and the number taken again."""
    born = born if born is not None else _born.get(pgid)
    leader = _started(pgid)
    if born and leader is not None and leader != born:
        return []
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            state, group, session = fields[0], int(fields[2]), int(fields[3])
            if group == pgid and session == pgid and state != "Z":
                found.append(int(stat.parent.name))
    return found


def children(pid: int) -> dict[int, str]:
    """The live child processes of ``pid``: pid -> command line (from ``/proc``)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
                found[int(stat.parent.name)] = command.decode(errors="replace").strip()
    return found


def end(
    group: int | subprocess.Popen[Any], *, grace: float = TERM_GRACE, term: bool = True
) -> None:
    """End a process group (its id, or the ``Popen`` of its leader, which is then waited
    for): SIGTERM (unless not ``term``: a crash), then SIGKILL after ``grace`` seconds for
    whatever is left; returns once none of it runs."""
    proc = group if isinstance(group, subprocess.Popen) else None
    pgid = proc.pid if proc is not None else int(group)  # type: ignore[arg-type]

    def reap() -> None:  # the leader is no zombie once its status is collected
        if proc is not None:
            proc.poll()
        else:
            _reap(pgid)

    def kill(signum: int) -> None:  # only a group that is still the one started
        if group_alive(pgid):
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signum)

    kill(signal.SIGTERM if term else signal.SIGKILL)
    deadline = time.monotonic() + grace
    while group_alive(pgid) and time.monotonic() < deadline:
        reap()
        time.sleep(0.05)
    kill(signal.SIGKILL)
    while group_alive(pgid):
        time.sleep(0.02)
    if proc is not None:
        proc.wait()
    else:
        _reap(pgid)
    _live.pop(pgid, None)
    _born.pop(pgid, None)
    if registry is not None:
        with suppress(OSError):
            (registry / str(pgid)).unlink()


def _reap(pid: int) -> None:
    """Collect the leader's exit status if it is our child (it is then no zombie)."""
    with suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def end_all() -> list[str]:
    """End every group this process started and did not end; the command lines of those
    that still ran."""
    left = [command for pgid, command in list(_live.items()) if group_alive(pgid)]
    for pgid in list(_live):
        end(pgid)
    return left


def end_registered(directory: Path) -> list[str]:
    """End every group written down in ``directory`` that still runs (whichever process
    of the session started it); their command lines."""
    left = []
    for entry in sorted(directory.glob("[0-9]*")) if directory.is_dir() else ():
        pgid = int(entry.name)
        born, _, command = entry.read_text().partition("\n")
        if group_alive(pgid, born):
            left.append(command)
            _born[pgid] = born
            end(pgid)
        with suppress(OSError):
            entry.unlink()
    return left


@contextmanager
def started(args: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """A process started in a group of its own (``start``), ended with its group when the
    block is left, however it is left."""
    proc = start(args, **popen)
    try:
        yield proc
    finally:
        end(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def run(
    args: Sequence[str], *, timeout: float, input: bytes | str | None = None, **popen: Any
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(args, timeout=timeout, capture_output=True)`` in a group of its own:
    the whole group is ended on a timeout, an error or an interrupt (and after a normal
    exit, for what the command left behind)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    with started(args, stdin=popen.pop("stdin", None) if input is None else subprocess.PIPE,
                 **popen) as proc:  # fmt: skip
        out, err = proc.communicate(input, timeout=timeout)
        return subprocess.CompletedProcess(args, proc.wait(), out, err)
