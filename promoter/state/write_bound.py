"""A bound on the promoter's own status writes: at most ``per_commit`` on one commit in any
``span`` seconds. Its checks change a few times while a change crosses an environment; a
write more often than that is a loop (an SCM handing a status back in other words, read
as new), and the bound stops it: the write waits, with a log line and
``promoter_status_writes_capped_total``, and is made when the window frees (the caller
asks again then). Thread-safe; it keeps only the commits written in the last ``span``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

PER_COMMIT = 20
"""Writes on one commit in a minute: every check of an environment (rule 4, the summary, a
hold, a pin, a freeze, built-in gates) going pending then decided, with room to spare."""
SPAN = 60.0


class WriteBound:
    def __init__(
        self,
        *,
        per_commit: int = PER_COMMIT,
        span: float = SPAN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_commit = per_commit
        self.span = span
        self.clock = clock
        self._lock = threading.Lock()
        self._writes: dict[tuple[str, str], deque[float]] = {}
        self._swept = 0.0

    def admit(self, repo: str, sha: str) -> float | None:
        """None, and the write counted, when one more write on ``sha`` is within the bound;
        else the seconds until it is."""
        now = self.clock()
        with self._lock:
            if now - self._swept > self.span:
                self._sweep(now)
            done = self._writes.setdefault((repo, sha), deque())
            while done and done[0] <= now - self.span:
                done.popleft()
            if len(done) >= self.per_commit:
                return done[0] + self.span - now
            done.append(now)
            return None

    def __len__(self) -> int:
        """Commits with a write counted (those of the last ``span``, until swept)."""
        with self._lock:
            return len(self._writes)

    def _sweep(self, now: float) -> None:
        """Forget the commits with no write in the last ``span``."""
        self._swept = now
        for key in [k for k, v in self._writes.items() if not v or v[-1] <= now - self.span]:
            del self._writes[key]
