"""A credential's primary (hourly) rate limit as the SCM's own answers state it.

GitHub sends ``x-ratelimit-limit``, ``-remaining``, ``-reset`` (epoch seconds) and
``-resource`` on every answer. Answers arrive out of order from several threads, so
within one window (one ``reset`` value) the lowest ``remaining`` wins, an answer from an
older window is ignored, and a later ``reset`` starts a new window. Past the reset the
remaining budget is unknown again and taken to be the whole limit. An answer without
the headers (GitHub Enterprise Server with rate limits off) lifts the primary limit
until headers come back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass
class PrimaryLimit:
    limit: int
    """Requests per window; replaced by ``x-ratelimit-limit``."""
    window: float
    """The window's length in seconds (an hour; shorter in a scaled benchmark)."""
    remaining: int | None = None
    """What the SCM said is left in the current window; None when unknown."""
    reset_at: float | None = None
    """When the current window ends, on the caller's monotonic clock."""
    unlimited: bool = False
    _reset_epoch: int = 0

    def learn(self, headers: Mapping[str, str], *, now: float, wall: float) -> None:
        """Update from one successful answer's headers (``now`` monotonic, ``wall`` epoch)."""
        lower = {k.lower(): v for k, v in headers.items()}
        if lower.get("x-ratelimit-resource", "core") != "core":
            return  # search, graphql, ...: budgets of their own
        try:
            limit = int(lower["x-ratelimit-limit"])
            remaining = int(lower["x-ratelimit-remaining"])
            reset = math.ceil(float(lower["x-ratelimit-reset"]))
        except (KeyError, ValueError):
            self.unlimited = "x-ratelimit-limit" not in lower
            return
        self.unlimited = False
        self.limit = max(limit, 1)
        if reset < self._reset_epoch:
            return  # a late answer from the window before
        if reset > self._reset_epoch or self.remaining is None:
            self._reset_epoch = reset
            self.remaining = remaining
        else:
            self.remaining = min(self.remaining, remaining)
        self.reset_at = now + (reset - wall)

    def rollover(self, now: float) -> None:
        """Forget the window once it has reset."""
        if self.reset_at is not None and now >= self.reset_at:
            self.remaining = None
            self.reset_at = None

    def available(self, now: float, *, in_flight: int) -> float:
        """Requests that may still go out in this window, counting those not yet answered."""
        self.rollover(now)
        left = self.limit if self.remaining is None else self.remaining
        return float(left - in_flight)

    def until_reset(self, now: float) -> float:
        """Seconds until the window resets (a whole window when the reset is unknown)."""
        if self.reset_at is None:
            return self.window
        return max(self.reset_at - now, 0.0)

    def rate(self, now: float, *, in_flight: int) -> float:
        """Requests per second that spread what is left evenly over what is left of the
        window, and never less than the limit spread over a whole window."""
        even = self.limit / self.window
        if self.remaining is None or self.reset_at is None:
            return even
        left = self.available(now, in_flight=in_flight)
        span = self.until_reset(now)
        return max(even, left / span) if span > 0 else even
