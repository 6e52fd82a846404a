"""Freed memory given back to the system once the daemon rests after work.

glibc's allocator keeps the pages that ``free`` empties inside its heap: it returns
memory on its own only from the top of the heap, and only past a threshold that it
raises to twice the largest block it has mapped and unmapped, up to 64 MB (git's
output of a large repository is such a block). A burst of work (a webhook storm, a
resync of every strategy) frees most of what it made, among objects that stay, so the
process's RSS stays at the burst's level. ``malloc_trim(0)`` walks the heap and gives
every whole free page back (``madvise``); what it gives back after a cold start and
after a webhook storm is in docs/performance.md (section 4, "Freed memory given back").

``MemoryTrim.tick`` runs on the scheduler's thread every ``TICK`` seconds and trims
once the work queue has been idle, with no reconcile finished, for ``REST`` seconds
after some work, and at most once every ``SPACING`` seconds: a steady trickle of
webhooks, each followed by a moment of rest, does not trim after every one (the pages
given back are faulted in again when the heap grows). The trim itself is the process-wide
tuning's (``promoter.tuning.libc_trim``); where the C library has no ``malloc_trim``
(musl, macOS), nothing is done.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("promoter.daemon")

TICK = 1.0
"""Seconds between two looks at the queue."""
REST = 1.0
"""Seconds the queue stays idle, with no reconcile finished, before a trim."""
SPACING = 30.0
"""Seconds at least between two trims."""


class MemoryTrim:
    """``tick()``: trim when the daemon has rested after work (see the module)."""

    def __init__(
        self,
        *,
        idle: Callable[[], bool],
        finished: Callable[[], int],
        trim: Callable[[], int] | None,
        clock: Callable[[], float] = time.monotonic,
        rest: float = REST,
        spacing: float = SPACING,
    ) -> None:
        """``idle``: nothing ready or running in the work queue; ``finished``: how many
        reconciles have finished so far; ``trim``: ``promoter.tuning.libc_trim()``, or None."""
        self._idle = idle
        self._finished = finished
        self._trim = trim
        self._clock = clock
        self._rest = rest
        self._spacing = spacing
        self._seen = finished()
        """Reconciles finished at the last tick."""
        self._trimmed = -1
        """Reconciles finished when memory was last trimmed (-1: never)."""
        self._quiet_since = clock()
        self._last = -spacing
        self.trims = 0

    def tick(self) -> None:
        """Trim now if the daemon rests after work (``trims`` counts the trims)."""
        if self._trim is None:
            return
        now = self._clock()
        finished = self._finished()
        if finished != self._seen:
            self._seen, self._quiet_since = finished, now
            return
        if finished == self._trimmed or not self._idle():
            return
        if now - self._quiet_since < self._rest or now - self._last < self._spacing:
            return
        started = time.perf_counter()
        released = self._trim()
        self._trimmed, self._last = finished, now
        self.trims += 1
        log.debug(
            "freed memory given back",
            extra={
                "released": bool(released),
                "ms": round((time.perf_counter() - started) * 1000, 2),
            },
        )
