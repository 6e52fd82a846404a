"""A keyed work queue in the style of controller-runtime's, for worker threads.

- A key waiting in the queue is never added twice (duplicates are dropped).
- A key is never handed to two workers: a key added while it is being processed
  is marked dirty and queued again when its worker calls ``done``.
- ``add_after`` delays a key (requeue-after, retry-after); an earlier add wins.
- ``backoff`` gives capped exponential delays per key, reset by ``forget``. A retry
  scheduled ``firm`` (after a failure) is not cut short by a ``soft`` add (the periodic
  resync); any other add (a webhook, a person) still runs the key at once.
- ``park`` sets a key aside after a permanent error: plain adds (the resync) drop it
  until an add with ``unpark=True`` (a webhook, a moved ref, a configuration change).
- ``hurry`` moves ready keys to the front, ahead of a backlog; a key hurried while
  it is being processed goes to the front when it is queued again, and ``urgent``
  lists the hurried keys still waiting (what a replica handing work over passes on).
Thread-safe; ``add`` never blocks on work, so the event loop may call it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from promoter.metrics import QUEUE_DEPTH


class ShutDown(Exception):
    """The queue was shut down; workers should exit."""


class WorkQueue:
    def __init__(
        self,
        *,
        base_delay: float = 0.05,
        max_delay: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cond = threading.Condition()
        self._ready: deque[str] = deque()  # popped from the left: O(1) at 10,000 keys
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty: set[str] = set()
        self._urgent: set[str] = set()
        """Keys hurried and not yet handed out (a webhook's, a person's)."""
        self._taken_urgent: set[str] = set()
        """Keys handed out while hurried, until done."""
        self._delayed: list[tuple[float, int, str]] = []
        self._due: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._not_before: dict[str, float] = {}
        self._firm: dict[str, float] = {}
        self._parked: dict[str, str] = {}
        self._seq = itertools.count()
        self._shutdown = False
        self._clock = clock
        self.finished = 0
        """Keys done so far (``done`` calls)."""
        self.base_delay = base_delay
        self.max_delay = max_delay

    # --- producers -------------------------------------------------------------------

    def add(self, key: str, *, unpark: bool = False) -> None:
        with self._cond:
            if unpark:
                self._parked.pop(key, None)
            self._add_locked(key)

    def add_many(self, keys: Iterable[str], *, soft: bool = False, unpark: bool = False) -> None:
        """Queue ``keys``; ``soft`` adds leave a key alone while its firm retry is pending;
        ``unpark`` adds (a change: a webhook, a moved ref) run parked keys again."""
        with self._cond:
            now = self._clock()
            for key in keys:
                if unpark:
                    self._parked.pop(key, None)
                if soft and self._firm.get(key, 0.0) > now:
                    continue
                self._add_locked(key)

    def hurry(self, keys: Iterable[str]) -> None:
        """Move these keys, when they are ready, to the front: work a webhook brought goes
        before a backlog of background reads (Kubernetes mode: a shard just taken over)."""
        with self._cond:
            for key in keys:
                if key in self._queued:
                    self._ready.remove(key)
                    self._ready.appendleft(key)
                    self._urgent.add(key)
                elif key in self._dirty:  # queued again when its worker is done: first
                    self._urgent.add(key)

    def unpark(self, keys: Iterable[str]) -> None:
        """Let these keys run again when next added (a change: a moved ref)."""
        with self._cond:
            for key in keys:
                self._parked.pop(key, None)

    def park(self, key: str, reason: str) -> None:
        """Set ``key`` aside: adds without ``unpark`` drop it (a permanent error)."""
        with self._cond:
            self._parked[key] = reason

    def parked(self) -> dict[str, str]:
        """The keys set aside, with why."""
        with self._cond:
            return dict(self._parked)

    def add_after(self, key: str, delay: float, *, firm: bool = False) -> None:
        """Queue ``key`` no earlier than ``delay`` seconds from now; a ``firm`` retry is not
        brought forward by a soft add."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutdown or key in self._queued:
                return
            due = self._clock() + delay
            if firm:
                self._firm[key] = due
            self._schedule_locked(key, due)

    def add_spread(
        self,
        keys: Sequence[str],
        over: float,
        *,
        start: int = 0,
        soft: bool = False,
    ) -> None:
        """Queue ``keys`` evenly over the next ``over`` seconds, the k-th (from 0) after
        ``(k + start) * over / len(keys)``: background work (the periodic resync's)
        never stands in front of a webhook's for long. ``soft`` as for ``add_many``."""
        if not keys:
            return
        step = max(over, 0.0) / len(keys)
        with self._cond:
            now = self._clock()
            for n, key in enumerate(keys):
                if soft and self._firm.get(key, 0.0) > now:
                    continue
                delay = (n + start) * step
                if delay <= 0:
                    self._add_locked(key)
                elif not (self._shutdown or key in self._queued or key in self._parked):
                    self._schedule_locked(key, now + delay)

    def not_before(self, key: str, delay: float) -> None:
        """Hand ``key`` out no earlier than ``delay`` from now, however often it is added."""
        with self._cond:
            self._not_before[key] = self._clock() + delay
            if key in self._queued:
                self._ready.remove(key)
                self._queued.discard(key)
            self._schedule_locked(key, self._not_before[key])

    def _schedule_locked(self, key: str, due: float) -> None:
        current = self._due.get(key)
        if current is not None and current <= due:
            return
        self._due[key] = due
        heapq.heappush(self._delayed, (due, next(self._seq), key))
        self._cond.notify()

    def _add_locked(self, key: str, *, from_delay: bool = False) -> None:
        if self._shutdown or key in self._parked:
            return
        hold = self._not_before.get(key)
        if hold is not None:
            if hold > self._clock():
                if key not in self._processing:
                    self._schedule_locked(key, hold)
                    return
            else:
                del self._not_before[key]
        if not from_delay:
            self._due.pop(key, None)
        if key in self._processing:
            self._dirty.add(key)
            return
        if key in self._queued:
            return
        self._queued.add(key)
        self._ready.append(key)
        QUEUE_DEPTH.set(len(self._ready))
        self._cond.notify()

    # --- consumers -------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> str | None:
        """The next ready key (now owned by the caller), None on timeout; ShutDown when closed."""
        deadline = None if timeout is None else self._clock() + timeout
        with self._cond:
            while True:
                if self._shutdown:
                    raise ShutDown
                self._promote_due_locked()
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    if key in self._urgent:
                        self._urgent.discard(key)
                        self._taken_urgent.add(key)
                    self._firm.pop(key, None)
                    self._processing.add(key)
                    QUEUE_DEPTH.set(len(self._ready))
                    return key
                wait = self._next_wait_locked(deadline)
                if wait is not None and wait <= 0:
                    return None
                self._cond.wait(wait)

    def done(self, key: str) -> None:
        """The caller finished ``key``; if it was added meanwhile, it is queued again."""
        with self._cond:
            self.finished += 1
            self._processing.discard(key)
            self._taken_urgent.discard(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._add_locked(key)
                if key in self._urgent and key in self._queued:
                    self._ready.remove(key)
                    self._ready.appendleft(key)
            if key not in self._queued and key not in self._due:
                self._urgent.discard(key)  # dropped (parked, shut down): nothing waits

    # --- retries ---------------------------------------------------------------------

    def backoff(self, key: str) -> float:
        """The next retry delay for ``key``: base * 2^failures, capped at max_delay."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        return float(min(self.max_delay, self.base_delay * 2.0 ** min(failures, 60)))

    def forget(self, key: str) -> None:
        with self._cond:
            self._failures.pop(key, None)

    # --- lifecycle and introspection -----------------------------------------------

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def waiting(self) -> int:
        """How many keys wait to run: ready now, or delayed (a retry, a requeue)."""
        with self._cond:
            return len(self._ready) + len(self._due)  # the heap keeps superseded entries

    def next_due(self) -> float | None:
        """Seconds until the next delayed key is due (0.0 when one is overdue); None when
        no key is delayed. A resync spreads its re-reads over its interval, so a daemon
        with nothing to do still has keys due later."""
        with self._cond:
            due = min(self._due.values(), default=None)
            return None if due is None else max(0.0, due - self._clock())

    def ready(self) -> list[str]:
        """The keys ready to run now, in order (for handing them to another replica)."""
        with self._cond:
            return list(self._ready)

    def hurried(self, key: str) -> bool:
        """Whether ``key``, handed out and not done, was hurried when it was handed out
        or since: a webhook's or a person's work, not a background read."""
        with self._cond:
            return key in self._taken_urgent or key in self._urgent

    def urgent(self) -> list[str]:
        """The hurried keys waiting to run, in order (for handing them to another
        replica): the others are background reads the next owner makes anyway."""
        with self._cond:
            return [key for key in self._ready if key in self._urgent] + sorted(
                key for key in self._urgent if key not in self._queued
            )

    def idle(self) -> bool:
        """Nothing ready, nothing processing (delayed keys may still be waiting)."""
        with self._cond:
            return not self._ready and not self._processing

    def _promote_due_locked(self) -> None:
        now = self._clock()
        while self._delayed and self._delayed[0][0] <= now:
            due, _, key = heapq.heappop(self._delayed)
            if self._due.get(key) == due:
                del self._due[key]
                self._add_locked(key, from_delay=True)

    def _next_wait_locked(self, deadline: float | None) -> float | None:
        now = self._clock()
        waits = []
        if self._delayed:
            waits.append(max(0.0, self._delayed[0][0] - now))
        if deadline is not None:
            waits.append(deadline - now)
        return min(waits) if waits else None
