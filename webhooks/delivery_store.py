"""The delivery log's SQLite file: delivery ids and when they arrived, in WAL mode.

Concurrency: one connection for ids (reads, commits, pruning) guarded by a lock, safe
to use from any thread; a second one, for the writer thread alone, moves the WAL into
the database (a passive checkpoint, which never blocks a commit). Commits never
checkpoint themselves (``wal_autocheckpoint=0``): a commit is an append to the WAL,
without an fsync (``synchronous=NORMAL``), so that it can run on the event loop.
Pruning deletes in small transactions, so that a commit never waits long behind it.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

_SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    received_at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deliveries_received_at ON deliveries (received_at);
"""
PRUNE_CHUNK = 500
"""Rows deleted per pruning transaction (about a millisecond)."""


def _connect(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA busy_timeout=2000")
    return db


class DeliveryStore:
    """Delivery ids in SQLite; every method may raise ``sqlite3.Error``."""

    def __init__(self, path: Path | str) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        """Guards ``_db``."""
        self._db = _connect(str(path))
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._db.executescript(_SCHEMA)
        self._checkpoints = _connect(str(path)) if str(path) != ":memory:" else None

    def newest(self, limit: int) -> list[tuple[str, float]]:
        """Up to ``limit`` ids with their time received, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, received_at FROM deliveries ORDER BY received_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [(str(i), float(at)) for i, at in rows]

    def contains(self, delivery_id: str) -> bool:
        with self._lock:
            row = self._db.execute("SELECT 1 FROM deliveries WHERE id = ?", (delivery_id,))
            return row.fetchone() is not None

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM deliveries").fetchone()[0])

    def write(self, rows: dict[str, float], deletes: list[str]) -> None:
        """Add ``rows`` and drop ``deletes`` in one transaction (nothing when both are empty)."""
        if not rows and not deletes:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    "INSERT OR IGNORE INTO deliveries (id, received_at) VALUES (?, ?)",
                    list(rows.items()),
                )
                self._db.executemany("DELETE FROM deliveries WHERE id = ?", [(d,) for d in deletes])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def prune(self, before: float) -> int:
        """Delete the ids received before ``before``, a chunk per transaction; how many."""
        deleted = 0
        while True:
            with self._lock:
                cursor = self._db.execute(
                    "DELETE FROM deliveries WHERE id IN (SELECT id FROM deliveries"
                    " WHERE received_at < ? LIMIT ?)",
                    (before, PRUNE_CHUNK),
                )
            deleted += max(cursor.rowcount, 0)
            if cursor.rowcount < PRUNE_CHUNK:
                return deleted

    def checkpoint(self) -> None:
        """Copy what the WAL holds into the database, as far as readers allow; never waits."""
        if self._checkpoints is not None:
            self._checkpoints.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def close(self) -> None:
        """A last checkpoint, then both connections closed."""
        try:
            self.checkpoint()
        finally:
            if self._checkpoints is not None:
                self._checkpoints.close()
            with self._lock:
                self._db.close()
