"""Deadlines on what must never take long: a lock held, a git command running.

Locks made as ``WatchedLock`` and calls run inside ``watch`` are registered here, process
wide (like the metrics registry). A ``Watchdog`` (the daemon runs one) looks at them every
``interval`` seconds and reports each one held or running past its deadline, once: an
error logged with the holding thread's stack, and one more in
``promoter_watchdog_overdue_total{kind, what}``. It only reports: nothing is broken off
(a lock released or a git killed half way could leave a ref or a note half written).

``WatchedLock`` also says whether a lock may be re-entered: a thread that takes a
non-reentrant one it already holds gets ``LockReentered`` at once, where a
``threading.Lock`` would wait for itself for ever and every thread after it for it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from promoter.metrics import WATCHDOG_OVERDUE_TOTAL

log = logging.getLogger("promoter.watchdog")

CALL_DEADLINE = 60.0
"""Seconds a local git command may run (one with a timeout of its own: that, plus
``GRACE``)."""
GRACE = 30.0
"""Seconds past its own timeout before a command that has one counts as overdue (the
timeout should have ended it)."""
LEAF_DEADLINE = 30.0
"""Seconds a leaf lock may be held (a few dicts, a journal line written and synced)."""
INTERVAL = 5.0
"""Seconds between two looks of the daemon's watchdog."""

Clock = Callable[[], float]
_get_ident = threading.get_ident


class LockReentered(RuntimeError):
    """A thread took a non-reentrant lock it already holds: a bug, raised instead of the
    deadlock it would be."""


@dataclass(frozen=True)
class Overdue:
    """One lock or call past its deadline, as reported."""

    kind: str
    """``lock`` or ``git``."""
    what: str
    detail: str
    held: float
    deadline: float
    thread: int | None


class WatchedLock:
    """A lock whose holder is known and whose holding has a deadline (see the module).

    ``reentrant``: the holder may take it again (released as many times as taken), as
    ``threading.RLock``; otherwise it raises ``LockReentered``. ``what`` names it in the
    metric (a few fixed words), ``detail`` in the log (a repository's name).
    """

    __slots__ = (
        "__weakref__",
        "_clock",
        "_depth",
        "_lock",
        "_owner",
        "_reported",
        "_since",
        "deadline",
        "detail",
        "reentrant",
        "what",
    )

    def __init__(
        self,
        what: str,
        *,
        detail: str = "",
        deadline: float = LEAF_DEADLINE,
        reentrant: bool = False,
        clock: Clock = time.monotonic,
    ) -> None:
        self.what = what
        self.detail = detail
        self.deadline = deadline
        self.reentrant = reentrant
        self._clock = clock
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._depth = 0
        self._since: float | None = None
        self._reported: float | None = None
        with _guard:
            _locks.add(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = _get_ident()
        if self._owner == me:
            if not self.reentrant:
                raise LockReentered(f"{self.what} {self.detail} taken again by its holder")
            self._depth += 1
            return True
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = me
        self._depth = 1
        self._since = self._clock()
        return True

    def release(self, *_: object) -> None:
        """Release once (``__exit__`` too: its arguments are ignored)."""
        if self._owner != _get_ident():
            raise RuntimeError(f"{self.what} released by a thread that does not hold it")
        depth = self._depth = self._depth - 1
        if depth:
            return
        self._since = None
        self._owner = None
        self._lock.release()

    def held(self) -> bool:
        """Whether the calling thread holds it."""
        return self._owner == _get_ident()

    # A ``with`` block is the lock's most frequent use (about 80 a reconcile): one call
    # each way, not two.
    __enter__ = acquire
    __exit__ = release

    def _overdue(self, now: float) -> Overdue | None:
        since, owner = self._since, self._owner
        if since is None or since == self._reported or now - since <= self.deadline:
            return None
        self._reported = since
        return Overdue("lock", self.what, self.detail, now - since, self.deadline, owner)


@dataclass(eq=False)
class _Call:
    what: str
    detail: str
    deadline: float
    since: float
    thread: int
    reported: bool = False


_guard = threading.Lock()
"""Guards the registry below; a leaf: nothing else is taken under it."""
_locks: weakref.WeakSet[WatchedLock] = weakref.WeakSet()
_calls: set[_Call] = set()


@contextmanager
def watch(
    what: str, *, detail: str = "", deadline: float = CALL_DEADLINE, clock: Clock = time.monotonic
) -> Iterator[None]:
    """Run the block as a call the watchdog watches (a git command)."""
    call = _Call(what, detail, deadline, clock(), threading.get_ident())
    with _guard:
        _calls.add(call)
    try:
        yield
    finally:
        with _guard:
            _calls.discard(call)


def overdue(now: float) -> list[Overdue]:
    """What is held or running past its deadline at ``now`` and was not reported yet
    (each holding and call is returned once)."""
    with _guard:
        locks = list(_locks)
        calls = list(_calls)
    found = [o for o in (lock._overdue(now) for lock in locks) if o is not None]
    for call in calls:
        if not call.reported and now - call.since > call.deadline:
            call.reported = True
            found.append(
                Overdue("git", call.what, call.detail, now - call.since, call.deadline, call.thread)
            )
    return found


def _stack(thread: int | None) -> str:
    frame = sys._current_frames().get(thread) if thread is not None else None
    return "".join(traceback.format_stack(frame)) if frame is not None else ""


class Watchdog:
    """Looks every ``interval`` seconds for locks and calls past their deadline and
    reports them (see the module). ``check`` looks once, on the caller's thread."""

    def __init__(self, *, interval: float = INTERVAL, clock: Clock = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def check(self) -> list[Overdue]:
        found = overdue(self._clock())
        names = {t.ident: t.name for t in threading.enumerate()}
        for item in found:
            WATCHDOG_OVERDUE_TOTAL.labels(kind=item.kind, what=item.what).inc()
            log.error(
                "held past its deadline",
                extra={
                    "kind": item.kind,
                    "what": item.what,
                    "detail": item.detail,
                    "held_s": round(item.held, 1),
                    "deadline_s": item.deadline,
                    "holder": names.get(item.thread, str(item.thread)),
                    "stack": _stack(item.thread),
                },
            )
        return found

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="promoter-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        self._stop.set()
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception:  # the watchdog must outlive what it watches
                log.exception("watchdog check failed")
