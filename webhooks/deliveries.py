"""The delivery log: which webhook deliveries were already handled, kept in SQLite.

A delivery id seen within the retention window is a duplicate (a redelivery or a
retry) and is not processed again.

Concurrency: the check-and-record of an id is atomic within the process (one lock
over the ids in memory), and the log is safe to use from any thread. ``record`` and
``forget`` never write to SQLite: they run on the event loop, so a writer thread of
the log's own writes behind them, on one connection in WAL mode guarded by a second
lock (taken after the first, never the other way round).

Speed: one commit per delivery would cost more than the rest of the request, so
the ids of the retention window are mirrored in memory (up to ``memory_limit``;
past that, a miss in memory is looked up in SQLite, the one disk access left on the
caller's thread) and new ids are written behind, one transaction per batch (every
``flush_every`` seconds or ``batch`` ids, and on ``close``). Ids waiting to be
written count as recorded. A crash may forget the last batch: those deliveries
would be processed again if redelivered, which is harmless since webhooks only
enqueue idempotent reconciles. The file belongs to one daemon; another process
writing to it is not seen until restart.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("promoter.webhooks")

FILE_NAME = "webhook-deliveries.sqlite3"
_INSERT_BATCH = (
    "INSERT OR IGNORE INTO deliveries (id, received_at)"
    " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
)
"""A whole batch in one statement: one step of SQLite, not one (and a hand-over of the
GIL to the event loop and back) per row."""
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
        self._pruned = 0
        """Rows pruned from SQLite since the last ``prune()`` (under ``_db_lock``)."""
        self._batch = batch
        self._memory_limit = memory_limit
        self._clock = clock
        self._lock = threading.Lock()
        """Guards the ids in memory: ``_seen``, ``_pending``, ``_writing``, ``_deletes``."""
        self._db_lock = threading.Lock()
        """Guards the connection; taken after ``_lock`` when both are needed."""
        self._pending: dict[str, float] = {}
        """Recorded, not yet handed to the writer."""
        self._writing: dict[str, float] = {}
        """Handed to the writer, not yet committed: still recorded for lookups."""
        self._deletes: list[str] = []
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
        self._next_prune = now
        self._prune_memory(now)
        self._prune_db(now)
        rows = self._db.execute(
            "SELECT id, received_at FROM deliveries ORDER BY received_at DESC LIMIT ?",
            (memory_limit + 1,),
        ).fetchall()
        self._complete = len(rows) <= memory_limit
        """Whether every id of the window is in memory (else misses are looked up in SQLite)."""
        self._seen.update(reversed(rows[:memory_limit]))
        self._wake = threading.Event()
        self._writer = threading.Thread(
            target=self._write_behind, name="promoter-delivery-log", daemon=True
        )
        self._writer.start()

    def record(self, delivery_id: str) -> bool:
        """Record a delivery; False when it was already recorded (a duplicate)."""
        now = self._clock()
        with self._lock:
            if self._known(delivery_id):
                return False
            self._seen[delivery_id] = now
            self._pending[delivery_id] = now
            if len(self._seen) > self._memory_limit:
                del self._seen[next(iter(self._seen))]
                self._complete = False
            if len(self._pending) >= self._batch or now >= self._next_flush:
                self._next_flush = now + self._flush_every
                self._wake.set()
            return True

    def forget(self, delivery_id: str) -> None:
        """Drop a delivery, so that a redelivery is processed (after a failed attempt)."""
        with self._lock:
            self._seen.pop(delivery_id, None)
            self._pending.pop(delivery_id, None)
            self._writing.pop(delivery_id, None)
            self._deletes.append(delivery_id)
            self._wake.set()

    def flush(self) -> None:
        """Write the ids held in memory, on the calling thread."""
        self._write_batch()

    def prune(self) -> int:
        """Forget deliveries older than the retention; the number deleted from SQLite since
        the last call (the writer thread may have pruned some of them itself)."""
        self._write_batch(prune_when_due=False)
        now = self._clock()
        with self._lock:
            self._prune_memory(now)
        self._prune_db(now)
        with self._db_lock:
            pruned, self._pruned = self._pruned, 0
        return pruned

    def __len__(self) -> int:
        """Ids stored, after writing what is pending (and pruning, when due)."""
        self._write_batch()
        with self._db_lock:
            row = self._db.execute("SELECT count(*) FROM deliveries").fetchone()
            return int(row[0])

    def close(self) -> None:
        """Write what is pending and close the database; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._wake.set()
        self._writer.join()
        try:
            self._write_batch()
        finally:
            with self._db_lock:
                self._db.close()

    # --- the writer ------------------------------------------------------------------

    def _write_behind(self) -> None:
        while not self._closed:
            self._wake.wait(self._flush_every)
            self._wake.clear()
            if self._closed:
                return
            try:
                self._write_batch()
            except sqlite3.Error:
                log.warning("webhook delivery log write failed", exc_info=True)

    def _write_batch(self, *, prune_when_due: bool = True) -> None:
        now = self._clock()
        with self._lock:
            rows, self._pending = self._pending, {}
            deletes, self._deletes = self._deletes, []
            self._writing.update(rows)
            prune = prune_when_due and now >= self._next_prune
            if prune:
                self._prune_memory(now)
        try:
            with self._db_lock:
                if rows:  # on failure these are lost: at worst a redelivery is processed twice
                    self._db.execute("BEGIN")
                    try:
                        self._db.execute(_INSERT_BATCH, (json.dumps(list(rows.items())),))
                        self._db.execute("COMMIT")
                    except BaseException:
                        self._db.execute("ROLLBACK")
                        raise
                if deletes:
                    self._db.executemany(
                        "DELETE FROM deliveries WHERE id = ?", [(d,) for d in deletes]
                    )
        finally:
            with self._lock:
                for delivery_id in rows:
                    self._writing.pop(delivery_id, None)
        if prune:
            self._prune_db(now)

    # --- helpers ---------------------------------------------------------------------

    def _known(self, delivery_id: str) -> bool:
        """Under ``_lock``: recorded in memory, waiting to be written, or stored."""
        if delivery_id in self._seen or delivery_id in self._pending:
            return True
        if delivery_id in self._writing:
            return True
        if self._complete:
            return False
        with self._db_lock:
            row = self._db.execute("SELECT 1 FROM deliveries WHERE id = ?", (delivery_id,))
            return row.fetchone() is not None

    def _prune_memory(self, now: float) -> None:
        """Under ``_lock``: forget the ids in memory older than the retention."""
        self._next_prune = now + self._prune_every
        cutoff = now - self.retention
        seen = self._seen
        while seen:
            oldest = next(iter(seen))
            if seen[oldest] >= cutoff:
                break
            del seen[oldest]

    def _prune_db(self, now: float) -> int:
        with self._db_lock:
            cursor = self._db.execute(
                "DELETE FROM deliveries WHERE received_at < ?", (now - self.retention,)
            )
            self._pruned += max(cursor.rowcount, 0)
            return cursor.rowcount
