"""The delivery log's SQLite file: delivery ids and when they arrived, in WAL mode.

Concurrency: safe to use from any thread. Ids are written in batches by the log's writer
thread on one connection (``synchronous=NORMAL``: a commit survives the crash of the
process; the journal keeps what is not committed yet); ``contains``, the lookup a
webhook may make on the event loop, has a connection of its own, which reads the last
commit while a batch is being written instead of waiting for it (a batch of random ids
into a large file takes tens of milliseconds).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from webhooks.delivery_journal import ADDED, FORGOTTEN

_SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    id TEXT PRIMARY KEY,
    received_at REAL NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS deliveries_received_at ON deliveries (received_at);
"""
_INSERT_BATCH = (
    "INSERT OR IGNORE INTO deliveries (id, received_at)"
    " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
)
"""A whole batch in one statement: one step of SQLite, not one (and a hand-over of the
GIL to the event loop and back) per row."""


class DeliveryStore:
    """Delivery ids in SQLite; every method may raise ``sqlite3.Error``."""

    def __init__(self, path: Path | str) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        """Guards ``_db``."""
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=2000")
        self._db.executescript(_SCHEMA)
        self._read_lock = self._lock
        """Guards ``_reader``."""
        self._reader = self._db
        if str(path) != ":memory:":  # another connection to ":memory:" is another database
            self._read_lock = threading.Lock()
            self._reader = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._reader.execute("PRAGMA busy_timeout=2000")

    def newest(self, limit: int) -> list[tuple[str, float]]:
        """Up to ``limit`` ids with their time received, newest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, received_at FROM deliveries ORDER BY received_at DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [(str(i), float(at)) for i, at in rows]

    def contains(self, delivery_id: str) -> bool:
        """Whether the id is committed (a batch being written is not waited for)."""
        with self._read_lock:
            row = self._reader.execute("SELECT 1 FROM deliveries WHERE id = ?", (delivery_id,))
            return row.fetchone() is not None

    def ids(self, after: str, limit: int) -> list[str]:
        """Up to ``limit`` stored ids greater than ``after``, in order: a scan, page by page,
        that holds the connection for one page at a time."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM deliveries WHERE id > ? ORDER BY id LIMIT ?", (after, limit)
            ).fetchall()
        return [str(row[0]) for row in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM deliveries").fetchone()[0])

    def write(self, rows: dict[str, float], deletes: list[str]) -> None:
        """Drop ``deletes``, then add ``rows``, in one transaction (nothing when both are
        empty). In that order: an id forgotten and then recorded again is in both, and stays
        (one recorded and then forgotten is only in ``deletes``)."""
        if not rows and not deletes:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                if deletes:
                    self._db.executemany(
                        "DELETE FROM deliveries WHERE id = ?", [(d,) for d in deletes]
                    )
                if rows:
                    self._db.execute(_INSERT_BATCH, (json.dumps(list(rows.items())),))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def apply(self, entries: Iterable[tuple[str, float, str]]) -> None:
        """Journal entries, in order, in one transaction: ``+`` adds an id, ``-`` drops it."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for op, at, delivery_id in entries:
                    if op == ADDED:
                        self._db.execute(
                            "INSERT OR IGNORE INTO deliveries (id, received_at) VALUES (?, ?)",
                            (delivery_id, at),
                        )
                    elif op == FORGOTTEN:
                        self._db.execute("DELETE FROM deliveries WHERE id = ?", (delivery_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def prune(self, before: float) -> int:
        """Delete the ids received before ``before``; how many."""
        with self._lock:
            cursor = self._db.execute("DELETE FROM deliveries WHERE received_at < ?", (before,))
            return max(cursor.rowcount, 0)

    def close(self) -> None:
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._db.close()
