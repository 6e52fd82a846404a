"""The garbage collector, set for a daemon whose heap is mostly long-lived state.

The daemon's heap is its state: the configuration, one view per strategy, the caches
of git and of the SCM. CPython collects the oldest generation (the whole heap) once
ten collections of the middle one have run and the objects promoted since the last
full collection are a quarter of those it holds, so a heap that grows, as in a cold
start, is walked whole again at every quarter of growth: at 10,000 strategies, from
170 MB to 550 MB, eight full collections took 6.6 s of the 46 s of CPU of the start.
What a reconcile throws away dies young, and the young generations are collected as
often as before; a full collection is only considered every ``FULL_EVERY`` collections
of the middle generation rather than every 10 (three in that start, 2.8 s).
"""

from __future__ import annotations

import gc

FULL_EVERY = 100
"""Collections of the middle generation between two chances of a full collection."""


def tune() -> None:
    """Consider a full collection every ``FULL_EVERY`` middle ones (process wide)."""
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, FULL_EVERY)
