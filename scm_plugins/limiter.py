"""One pause per credential: after a rate limit, every call on that credential waits.

A rate limit is the SCM's answer for a token, not for a strategy: when one call is told
to wait, every other call through the same plugin instance (one configured provider,
one credential) is refused at once with the remaining wait, so the queue retries each
strategy after it instead of spending the next calls into the same limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


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
        until = self._until  # one read of a float: no lock for the usual "no pause"
        if not until:
            return 0.0
        return max(0.0, until - self._clock())
