"""Process-wide tuning, in one place: the daemon calls ``tune()`` once as it starts.

Nothing else in promoter changes a setting of the whole process. ``tune`` sets the
garbage collector for a heap that is mostly long-lived state, and ``libc_trim`` gives
the daemon the C library's ``malloc_trim``, which it calls once it rests after work
(``promoter.daemon.memory.trim`` says when).

The collector. The daemon's heap is its state: the configuration, one view per
strategy, the caches of git and of the SCM. CPython walks the whole heap again each time
the objects promoted since its last full collection reach a quarter of it, so a heap
that grows, as in a cold start, is walked whole at every quarter of growth; and at its
default threshold (700) the youngest generation is collected in the middle of nearly
every reconcile, promoting what the reconcile still holds. A full collection is
considered every ``FULL_EVERY`` collections of the middle generation rather than every
10, and the youngest generation is collected every ``YOUNG`` allocations; cyclic garbage
waits at most ``YOUNG`` allocations longer to be found (docs/performance.md has the
figures of a cold start before and after).

The process gets no audit hook and no trace function from promoter: Python code run by
an audit hook inside ``sys.settrace`` lets another thread start meanwhile, and CPython
3.11 then refuses that thread's own ``sys.settrace`` (debuggers and coverage set one in
every new thread), so the thread dies before it runs.
"""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Callable

FULL_EVERY = 100
"""Collections of the middle generation between two chances of a full collection."""

YOUNG = 10_000
"""Objects made (less those freed) between two collections of the youngest generation."""


def tune() -> None:
    """Set the process for the daemon. Calling it again changes nothing more."""
    tune_collector()


def tune_collector() -> None:
    """Collect the youngest generation every ``YOUNG`` allocations at least as seldom as
    the process asked, and consider a full collection every ``FULL_EVERY`` middle ones."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG), middle, FULL_EVERY)


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
