"""Two ways to bound how much is spent over time: a sliding window and a token bucket.

Both are plain values over a clock the caller passes in (``now``, seconds); they hold no
lock, the credential budget that owns them does. ``SlidingWindow`` keeps an exact log, so
nothing spent through it ever exceeds ``capacity`` within any ``span`` seconds;
``TokenBucket`` spreads spending at ``rate`` per second after a burst of ``capacity``.
"""

from __future__ import annotations

import math
from collections import deque


class SlidingWindow:
    """At most ``capacity`` units within any ``span`` seconds (an entry at ``t`` counts
    until ``t + span``)."""

    def __init__(self, capacity: float, span: float) -> None:
        self.capacity = capacity
        self.span = span
        self._log: deque[tuple[float, float]] = deque()
        self._total = 0.0

    def wait(
        self, amount: float, now: float, *, reserve: float = 0.0, capacity: float | None = None
    ) -> float:
        """Seconds until ``amount`` fits with ``reserve`` units left over (within
        ``capacity`` rather than the window's own, when given); 0 when it fits now,
        ``inf`` when it never can."""
        self._expire(now)
        room = (self.capacity if capacity is None else capacity) - reserve
        if amount > room:
            return math.inf
        excess = self._total + amount - room
        if excess <= 0:
            return 0.0
        freed = 0.0
        for at, spent in self._log:
            freed += spent
            if freed >= excess:
                return at + self.span - now
        return math.inf  # pragma: no cover - the log holds the whole total

    def spend(self, amount: float, now: float) -> None:
        self._expire(now)
        self._log.append((now, amount))
        self._total += amount

    def give_back(self, amount: float) -> None:
        """Unspend ``amount`` of what was spent last (a call that was never sent)."""
        while amount > 0 and self._log:
            at, spent = self._log.pop()
            taken = min(spent, amount)
            amount -= taken
            self._total -= taken
            if spent > taken:
                self._log.append((at, spent - taken))
        if not self._log:
            self._total = 0.0

    def _expire(self, now: float) -> None:
        while self._log and self._log[0][0] + self.span <= now:
            _, spent = self._log.popleft()
            self._total -= spent
        if not self._log:
            self._total = 0.0  # no float dust left behind


class TokenBucket:
    """``capacity`` tokens, refilled at ``rate`` per second; a refund never overfills it,
    and a charge after the fact may take it below zero (a debt the refill pays back)."""

    def __init__(self, *, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = capacity
        self._tokens = capacity
        self._at = now

    def wait(self, amount: float, now: float, *, reserve: float = 0.0) -> float:
        """Seconds until ``amount`` tokens can be taken with ``reserve`` left over."""
        self._refill(now)
        missing = amount + reserve - self._tokens
        if missing <= 0:
            return 0.0
        if amount + reserve > self.capacity or self.rate <= 0:
            return math.inf
        return missing / self.rate

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self._tokens -= amount

    def give(self, amount: float, now: float) -> None:
        self._refill(now)
        self._tokens = min(self.capacity, self._tokens + amount)

    def retune(self, *, rate: float, capacity: float, now: float) -> None:
        """A new rate and size from now on. A smaller bucket keeps what was earned up to
        its size; a larger one keeps the same share of itself full (a credential found to
        have a higher limit, or a larger share of it, has that much more room now), a debt
        staying what it was."""
        self._refill(now)
        if capacity > self.capacity > 0 and self._tokens > 0:
            self._tokens *= capacity / self.capacity
        self.rate = rate
        self.capacity = capacity
        self._tokens = min(self._tokens, capacity)

    def _refill(self, now: float) -> None:
        if now > self._at:
            self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
        self._at = max(self._at, now)
