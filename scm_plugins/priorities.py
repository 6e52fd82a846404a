"""Who goes first when a credential's budget is short: the classes of calls, the share of
each limit a class leaves to the classes above it, and how long a call of each class may
wait in its own thread (``scm_plugins.budget`` spends them)."""

from __future__ import annotations

from enum import IntEnum


class Priority(IntEnum):
    """Who goes first when a credential's budget is short (lower is sooner)."""

    MERGE = 0
    PRE_MERGE_READ = 1
    WRITE = 2
    READ = 3


RESERVE = {
    Priority.MERGE: 0.0,
    Priority.PRE_MERGE_READ: 0.02,
    Priority.WRITE: 0.05,
    Priority.READ: 0.10,
}
"""The share of each limit a class leaves to the classes above it."""

HOLD = {
    Priority.MERGE: 1.0,
    Priority.PRE_MERGE_READ: 1.0,
    Priority.WRITE: 0.5,
    Priority.READ: 0.25,
}
"""The share of ``Limits.max_wait`` a call of each class may wait in its own thread."""
