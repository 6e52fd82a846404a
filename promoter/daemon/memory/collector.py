"""The garbage collector, set for a daemon whose heap is mostly long-lived state.

The daemon's heap is its state: the configuration, one view per strategy, the caches
of git and of the SCM. CPython collects the oldest generation (the whole heap) once
ten collections of the middle one have run and the objects promoted since the last
full collection are a quarter of those it holds, so a heap that grows, as in a cold
start, is walked whole again at every quarter of growth: at 10,000 strategies, from
170 MB to 550 MB, eight full collections took 6.6 s of the 46 s of CPU of the start.
A full collection is only considered every ``FULL_EVERY`` collections of the middle
generation rather than every 10 (two in that start, 1.4 to 1.6 s).

The youngest generation is collected once ``YOUNG`` more objects were made than
freed, not CPython's 700: a reconcile makes a few thousand objects that die with it,
and at 700 the collector ran in the middle of nearly every one, promoting what was
still in use to the middle generation, which was collected 270 times in that start,
and those collections led to the full ones. At ``YOUNG`` the same start ran 16 middle
collections and no full one: 0.9 s in the collector, 2.3 s before. Cyclic garbage
waits at most ``YOUNG`` allocations longer to be found, a few MB at most.
"""

from __future__ import annotations

import gc

FULL_EVERY = 100
"""Collections of the middle generation between two chances of a full collection."""

YOUNG = 10_000
"""Objects made (less those freed) between two collections of the youngest generation."""


def tune() -> None:
    """Collect the youngest generation every ``YOUNG`` allocations at least as seldom as
    the process asked, and consider a full collection every ``FULL_EVERY`` middle ones
    (process wide)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG), middle, FULL_EVERY)
