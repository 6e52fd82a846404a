"""The delivery log: which webhook deliveries were already handled, kept in SQLite.

A delivery id seen within the retention window is a duplicate (a redelivery or a
retry) and is not processed again.

Concurrency: one connection in WAL mode and one lock; the check-and-record of an
id is atomic within the process, and the log is safe to use from any thread.

Speed: one commit per delivery would cost more than the rest of the request, so
the ids of the retention window are mirrored in memory (up to ``memory_limit``;
past that, a miss in memory is checked in SQLite) and new ids are written behind,
one transaction per batch (every ``flush_every`` seconds or ``batch`` ids, and on
``close``). A crash may forget the last batch: those deliveries would be processed
again if redelivered, which is harmless since webhooks only enqueue idempotent
reconciles. The file belongs to one daemon; another process writing to it is not
seen until restart.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

FILE_NAME = "webhook-deliveries.sqlite3"
MIN_RETENTION = 86400.0
"""Deliveries are remembered at least this long (seconds), whatever the configuration says."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    received_at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deliveries_received_at ON deliveries (received_at);
"""


class DeliveryLog:
    """``record(id)`` is True the first time an id is seen within ``retention`` seconds."""

    def __init__(
        self,
        path: Path | str,
        *,
        retention: float = 2 * MIN_RETENTION,
        prune_every: float = 60.0,
        flush_every: float = 0.5,
        batch: int = 256,
        memory_limit: int = 100_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.retention = retention
        self._prune_every = prune_every
        self._flush_every = flush_every
        self._batch = batch
        self._memory_limit = memory_limit
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: list[tuple[str, float]] = []
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=2000")
        self._db.executescript(_SCHEMA)
        self._closed = False
        self._seen: dict[str, float] = {}
        """Ids of the window by time received, oldest first."""
        now = clock()
        self._next_flush = now + flush_every
        self._prune_locked(now)
        rows = self._db.execute(
            "SELECT id, received_at FROM deliveries ORDER BY received_at DESC LIMIT ?",
            (memory_limit + 1,),
        ).fetchall()
        self._complete = len(rows) <= memory_limit
        """Whether every id of the window is in memory (else misses are looked up in SQLite)."""
        self._seen.update(reversed(rows[:memory_limit]))

    def record(self, delivery_id: str) -> bool:
        """Record a delivery; False when it was already recorded (a duplicate)."""
        now = self._clock()
        with self._lock:
            if delivery_id in self._seen or (not self._complete and self._stored(delivery_id)):
                return False
            self._seen[delivery_id] = now
            self._pending.append((delivery_id, now))
            if len(self._seen) > self._memory_limit:
                del self._seen[next(iter(self._seen))]
                self._complete = False
            if len(self._pending) >= self._batch or now >= self._next_flush:
                self._flush_locked(now)
            return True

    def forget(self, delivery_id: str) -> None:
        """Drop a delivery, so that a redelivery is processed (after a failed attempt)."""
        with self._lock:
            self._seen.pop(delivery_id, None)
            self._pending = [p for p in self._pending if p[0] != delivery_id]
            self._db.execute("DELETE FROM deliveries WHERE id = ?", (delivery_id,))

    def flush(self) -> None:
        """Write the ids held in memory."""
        with self._lock:
            self._flush_locked(self._clock())

    def prune(self) -> int:
        """Forget deliveries older than the retention; the number deleted from SQLite."""
        with self._lock:
            now = self._clock()
            self._flush_locked(now)
            return self._prune_locked(now)

    def __len__(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM deliveries").fetchone()
            return int(row[0]) + len(self._pending)

    def close(self) -> None:
        """Write what is pending and close the database; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                self._flush_locked(self._clock())
            finally:
                self._db.close()

    def _stored(self, delivery_id: str) -> bool:
        row = self._db.execute("SELECT 1 FROM deliveries WHERE id = ?", (delivery_id,))
        return row.fetchone() is not None

    def _flush_locked(self, now: float) -> None:
        self._next_flush = now + self._flush_every
        if self._pending:
            rows, self._pending = self._pending, []  # on failure these are lost: at worst
            self._db.execute("BEGIN")  # a redelivery is processed twice
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO deliveries (id, received_at) VALUES (?, ?)", rows
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if now >= self._next_prune:
            self._prune_locked(now)

    def _prune_locked(self, now: float) -> int:
        self._next_prune = now + self._prune_every
        cutoff = now - self.retention
        seen = self._seen
        while seen:
            oldest = next(iter(seen))
            if seen[oldest] >= cutoff:
                break
            del seen[oldest]
        cursor = self._db.execute("DELETE FROM deliveries WHERE received_at < ?", (cutoff,))
        return cursor.rowcount
