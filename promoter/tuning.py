"""Process-wide tuning, in one place: the daemon calls ``tune()`` once as it starts.

Nothing else in promoter changes a setting of the whole process. ``tune`` sets:

- **the garbage collector**, for a heap that is mostly long-lived state (below);
- **a watch on the process environment** (``environment_version``), so that the git
  processes' environment is built once and again only when ``os.environ`` changes
  (``promoter.git.child_env``).

and ``libc_trim`` gives the daemon the C library's ``malloc_trim``, which the daemon
calls once it rests after work (``promoter.daemon.memory.trim`` says when).

The collector. The daemon's heap is its state: the configuration, one view per strategy,
the caches of git and of the SCM. CPython collects the oldest generation (the whole heap)
once ten collections of the middle one have run and the objects promoted since the last
full collection are a quarter of those it holds, so a heap that grows, as in a cold start,
is walked whole again at every quarter of growth: at 10,000 strategies, from 170 MB to
550 MB, eight full collections took 6.6 s of the 46 s of CPU of the start. A full
collection is only considered every ``FULL_EVERY`` collections of the middle generation
rather than every 10 (two in that start, 1.4 to 1.6 s). The youngest generation is
collected once ``YOUNG`` more objects were made than freed, not CPython's 700: a
reconcile makes a few thousand objects that die with it, and at 700 the collector ran in
the middle of nearly every one, promoting what was still in use to the middle
generation, which was collected 270 times in that start, and those collections led to
the full ones. At ``YOUNG`` the same start ran 16 middle collections and no full one:
0.9 s in the collector, 2.3 s before. Cyclic garbage waits at most ``YOUNG`` allocations
longer to be found, a few MB at most.

The environment. Every write to ``os.environ`` calls ``os.putenv`` or ``os.unsetenv``,
which raise the audit events of the same names (documented, public) just before the
mapping changes. An audit hook counts them (``environment_version``) and keeps each
change pending until ``os.environ`` shows it, so a reader never takes the mapping of
before a change for the one after. Audit hooks cannot be removed: the hook is added once
per process, and costs a comparison per audit event. A variable set with ``os.putenv``
alone, which ``os.environ`` never shows, leaves its change pending for good: the version
is then None and the git processes' environment is built for every command, as it is
before the watch is set.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import threading
from collections.abc import Callable

FULL_EVERY = 100
"""Collections of the middle generation between two chances of a full collection."""

YOUNG = 10_000
"""Objects made (less those freed) between two collections of the youngest generation."""

_lock = threading.Lock()
_watching = False
_version = 0
_pending: dict[str, str | None] = {}
"""Changes the hook heard of that ``os.environ`` may not show yet: name -> value (None:
unset)."""


def tune() -> None:
    """Set the process for the daemon: its garbage collector and the environment's watch.
    Calling it again changes nothing more."""
    tune_collector()
    watch_environment()


def tune_collector() -> None:
    """Collect the youngest generation every ``YOUNG`` allocations at least as seldom as
    the process asked, and consider a full collection every ``FULL_EVERY`` middle ones."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG), middle, FULL_EVERY)


def watch_environment() -> None:
    """Count the changes of ``os.environ`` from now on (once per process)."""
    global _watching
    with _lock:
        if not _watching:
            sys.addaudithook(_heard)
            _watching = True


def environment_version() -> int | None:
    """A number that changes with every change of ``os.environ``; None while the watch is
    not set, or while a change it heard of is not in ``os.environ`` yet."""
    if not _watching:
        return None
    with _lock:
        for name, value in _pending.items():
            if os.environ.get(name) != value:
                return None
        _pending.clear()
        return _version


def _heard(event: str, args: tuple[object, ...]) -> None:
    """The audit hook: ``os.putenv(name, value)`` and ``os.unsetenv(name)``, raised before
    ``os.environ`` changes. It must never raise: the write would fail."""
    if event == "os.putenv" and len(args) == 2:
        _changing(args[0], args[1])
    elif event == "os.unsetenv" and len(args) == 1:
        _changing(args[0], None)


def _changing(name: object, value: object) -> None:
    global _version
    if not isinstance(name, str | bytes) or not isinstance(value, str | bytes | None):
        return
    with _lock:
        _version += 1
        _pending[os.fsdecode(name)] = None if value is None else os.fsdecode(value)


def libc_trim() -> Callable[[], int] | None:
    """``malloc_trim(0)`` of the C library the process runs on, or None when it has none
    (musl, macOS): it gives every whole free page of the heap back to the system."""
    try:
        func = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    func.argtypes = [ctypes.c_size_t]
    func.restype = ctypes.c_int
    return lambda: int(func(0))
