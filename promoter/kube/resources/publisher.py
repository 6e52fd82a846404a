"""What a reconcile tells the API server, written on a thread of its own.

A reconcile ends by showing what it found: the strategy's status, and an Event for each
thing it did. Written in the reconcile, every such write held the strategy's key, so a
slow API server held its next reconcile too (a merge waited for the status write of the
reconcile that opened its PR, in a rolling restart: docs/scaling.md), and a hanging one
held it up to the request's timeout. Now the reconcile only hands them here, and one
thread writes them:

* a strategy's status is written from what is known when its turn comes, so the
  reconciles that end while a write is under way make one more write, not one each
  (``latest``, keyed by the strategy);
* Events are created in the order they came, at most ``MAX_WAITING`` waiting: past that
  the oldest is dropped and counted, so an API server that stopped answering holds no
  more memory than that (``append``).

A write that raises is logged and the next one runs; fencing is the writes' own (each
checks its shard's hold when it runs, not when it was handed over).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from prometheus_client import Counter

from promoter.metrics import REGISTRY

log = logging.getLogger("promoter.kube.publisher")

MAX_WAITING = 1000
"""Events waiting to be created, at most; the oldest goes first past that."""

DROPPED = Counter(
    "promoter_kube_events_dropped_total",
    "Events not created because too many were waiting for the API server",
    registry=REGISTRY,
)

Write = Callable[[], None]


class Publisher:
    def __init__(self, *, name: str = "kube-publisher", max_waiting: int = MAX_WAITING) -> None:
        self._latest: dict[str, Write] = {}
        """The status writes waiting, by key, oldest key first."""
        self._appended: deque[Write] = deque()
        self._max_waiting = max_waiting
        self.dropped = 0
        self._busy = False
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def latest(self, key: str, write: Write) -> None:
        """Run ``write`` once, unless a later one for ``key`` comes before its turn."""
        with self._cond:
            self._latest.pop(key, None)
            self._latest[key] = write
            self._cond.notify()

    def append(self, write: Write) -> None:
        """Run ``write`` after those appended before it."""
        with self._cond:
            if len(self._appended) >= self._max_waiting:
                self._appended.popleft()
                self.dropped += 1
                DROPPED.inc()
                if self.dropped == 1 or self.dropped % self._max_waiting == 0:
                    log.warning("kube writes dropped", extra={"dropped": self.dropped})
            self._appended.append(write)
            self._cond.notify()

    def idle(self) -> bool:
        """Nothing waiting and nothing being written."""
        with self._cond:
            return not (self._busy or self._latest or self._appended)

    def stop(self, timeout: float, *, drop: bool = False) -> None:
        """Write what waits (for up to ``timeout`` seconds), then end the thread; with
        ``drop``, what waits is not written (a replica cut off as if killed)."""
        with self._cond:
            if drop:
                self._latest.clear()
                self._appended.clear()
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=timeout)

    def _next(self) -> Write | None:
        """The next write (Events first: they tell what happened, in order); None to end."""
        with self._cond:
            self._busy = False
            while not (self._latest or self._appended):
                if self._stopping:
                    return None
                self._cond.wait()
            self._busy = True
            if self._appended:
                return self._appended.popleft()
            key = next(iter(self._latest))
            return self._latest.pop(key)

    def _run(self) -> None:
        while (write := self._next()) is not None:
            try:
                write()
            except Exception:  # a bug in one write must not stop the others
                log.error("kube write failed", exc_info=True)
