"""The hold a write is made under, checked right before each of its requests is sent.

A sharded replica may write for a repository only while it holds the repository's
shard (``promoter.kube.shards.fence``). Checking that once, when a write operation
begins, leaves everything that comes after it uncovered: the wait for room in the
credential's budget (a second or two a call when it is short), the reads an operation
makes before its write, the request itself. A process stopped anywhere in there (a
SIGSTOP, a long pause, a lost network) would send the write after its hold lapsed.

So the fence puts its hold in the context of the write (``holding``), and the one
counted-call helper (``scm_plugins.calls``) asks it again right before each request goes
out (``before_send``): a lapsed or lost hold raises there, before anything is sent. And
a request's deadline (connect, send and read) is cut to end before the hold does
(``deadline``), so a request still in flight when the hold lapses is given up on, not
answered after it. A request that needs more than what is left of the hold is not sent
at all (``MIN_LEFT``).

The hold is a context variable: each worker thread, and each write within it, has its
own; a write outside any hold (standalone, one leader, a read) is not checked here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

from promoter.errors import HoldLapsed

MIN_LEFT = 0.05
"""Seconds of hold a request needs to be sent at all: less is refused as lapsed."""
MARGIN = 0.02
"""Seconds a request's deadline ends before the hold does."""


class Hold(Protocol):
    """What a write is made under (``ShardFence.hold`` gives one per repository)."""

    def left(self) -> float:
        """Seconds until the hold lapses; raises (``NotOwner``, ``HoldLapsed``) when the
        write may not be made at all any more."""


_CURRENT: ContextVar[Hold | None] = ContextVar("promoter_write_hold", default=None)


@contextmanager
def holding(hold: Hold) -> Iterator[None]:
    """Every request sent within the block is checked against ``hold`` first."""
    token = _CURRENT.set(hold)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Hold | None:
    return _CURRENT.get()


def before_send() -> float | None:
    """Right before a request is sent: the seconds of hold it has (None outside any hold);
    raises when the hold lapsed or was lost, or has less than ``MIN_LEFT`` left."""
    hold = _CURRENT.get()
    if hold is None:
        return None
    left = hold.left()
    if left < MIN_LEFT:
        raise HoldLapsed(f"the write's hold has {max(left, 0.0):.3f} s left", delay=MIN_LEFT)
    return left


def deadline(seconds: float) -> float:
    """A request's deadline: ``seconds``, or less so that it ends before the hold does
    (``before_send`` checked first: raises as it does)."""
    left = before_send()
    if left is None:
        return seconds
    return max(min(seconds, left - MARGIN), MIN_LEFT - MARGIN)
