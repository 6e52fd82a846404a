"""Per credential: one pause after a rate limit, and a budget that keeps calls under it.

A rate limit is the SCM's answer for a token, not for a strategy: when one call is told
to wait, every other call through the same plugin instance (one configured provider,
one credential) is refused at once with the remaining wait, so the queue retries each
strategy after it instead of spending the next calls into the same limit.

Better not to be told at all: ``RateBudget`` paces the calls of a credential so that
they stay under the SCM's primary limit (spent evenly over its window, after a burst)
and under GitHub's secondary limits (points and writes per minute, writes per hour).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


class CredentialPause:
    """Until when calls on a credential must wait. Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._until = 0.0
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        """Wait ``seconds`` from now (a shorter pause never cuts a longer one short)."""
        with self._lock:
            self._until = max(self._until, self._clock() + max(seconds, 0.0))

    def remaining(self) -> float:
        """Seconds still to wait; 0 when calls may go out."""
        with self._lock:
            return max(0.0, self._until - self._clock())


@dataclass(frozen=True)
class Budget:
    """A credential's limits: GitHub's primary and secondary rate limits by default.

    Primary: ``per_window`` requests per ``window`` seconds (GitHub: 5,000 per hour for
    a token; the actual figures are learned from ``x-ratelimit-*`` headers). Secondary
    (GitHub's documented limits): at most ``points_per_minute`` points per minute for
    the REST API (a GET or HEAD costs 1, a write 5), at most ``writes_per_minute`` and
    ``writes_per_hour`` content-creating requests. ``minute`` and ``window`` are the
    lengths of those periods in seconds (a benchmark compresses time by shortening them).
    """

    per_window: int = 5000
    window: float = 3600.0
    minute: float = 60.0
    points_per_minute: int = 900
    writes_per_minute: int = 80
    writes_per_hour: int = 500
    burst: float = 0.5
    """The share of the primary budget that may go at once (a cold start, a burst of
    changes); the rest is spread evenly over what is left of the window."""


WRITE_POINTS, READ_POINTS = 5, 1
SLACK = 1.05
"""Periods are kept 5 % longer than the SCM's, for the time a request takes to arrive."""


class RateBudget:
    """Spreads one credential's calls under its limits. Thread-safe.

    ``delay(write)`` is 0 when a call may go now (and counts it), else the seconds until
    it may. The primary budget is spent no faster than evenly over the rest of the
    window, after a burst allowance: by time ``t`` of the window, at most
    ``burst + t / window`` of it is used. ``observe`` corrects the count from the
    SCM's own headers; ``refund`` gives back a call the SCM did not charge (a 304).
    """

    def __init__(self, budget: Budget | None = None, clock: Callable[[], float] = time.time):
        self.budget = budget or Budget()
        self._clock = clock
        self._lock = threading.Lock()
        self._limit = self.budget.per_window
        self._used = 0
        now = clock()
        self._reset = now + self.budget.window
        self._recent: deque[tuple[float, int]] = deque()
        """(time, points) of the calls of the last minute."""
        self._writes: deque[float] = deque()
        """Times of the writes of the last hour (``window``)."""

    def observe(self, limit: int, remaining: int, reset: float) -> None:
        """What the SCM says: the window's limit, what is left, when it resets (epoch)."""
        with self._lock:
            self._reset = reset
            self._limit = max(1, limit)
            self._used = max(0, limit - remaining)

    def refund(self) -> None:
        with self._lock:
            self._used = max(0, self._used - 1)

    def delay(self, *, write: bool) -> float:
        b = self.budget
        with self._lock:
            now = self._clock()
            if now >= self._reset:
                self._reset, self._used = now + b.window, 0
            # A call is counted from when it leaves, and the SCM counts it when it
            # arrives: keep each a little longer than the period, never at the edge.
            minute_ago, window_ago = now - b.minute * SLACK, now - b.window * SLACK
            while self._recent and self._recent[0][0] <= minute_ago:
                self._recent.popleft()
            while self._writes and self._writes[0] <= window_ago:
                self._writes.popleft()
            waits = [self._primary_wait(now)]
            points = WRITE_POINTS if write else READ_POINTS
            spent = sum(p for _, p in self._recent)
            if spent + points > b.points_per_minute:
                waits.append(self._recent[0][0] + b.minute * SLACK - now)
            if write:
                in_minute = [t for t in self._writes if t > minute_ago]
                if len(in_minute) >= b.writes_per_minute:
                    waits.append(in_minute[0] + b.minute * SLACK - now)
                if len(self._writes) >= b.writes_per_hour:
                    waits.append(self._writes[0] + b.window * SLACK - now)
            wait = max(waits)
            if wait > 0:
                return wait
            self._used += 1
            self._recent.append((now, points))
            if write:
                self._writes.append(now)
            return 0.0

    def _primary_wait(self, now: float) -> float:
        """Seconds until one more call fits under the even spend of the window."""
        if self._used + 1 > self._limit:
            return self._reset - now
        window = self.budget.window
        burst = self.budget.burst * self._limit
        start = min(self._reset - window, now)  # a reset further off than a window: now
        # By time t into the window, burst + limit * t / window calls may have gone.
        due = start + (self._used + 1 - burst) * window / self._limit
        return max(0.0, due - now)
