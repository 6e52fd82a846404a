"""The delivery log's SQLite file: a key per delivery id and when it arrived, in WAL mode.

What is stored of an id is its key, a 64-bit hash (``delivery_key``): a row of two
numbers. With the id's text each row was about three times larger, and a batch of
random ids (GitHub's are UUIDs) into a table of 100,000 or more cost two to three times
as much to insert. Two different ids share a key with a chance of about n² / 2⁶⁵ for n
ids in the window (3 in 100 million at a million): the second one would be taken for a
duplicate, and the periodic resync would still see its change.

A file of the earlier layout (the ids' text, table ``deliveries``) is converted when it
is opened.

Concurrency: safe to use from any thread. Keys are written in batches by the log's
writer thread on one connection (``synchronous=NORMAL``: a commit survives the crash of
the process; the journal keeps what is not committed yet); ``contains``, the lookup a
webhook may make on the event loop, has a connection of its own, which reads the last
commit while a batch is being written instead of waiting for it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

from webhooks.delivery_journal import ADDED, FORGOTTEN

_SCHEMA = """
CREATE TABLE IF NOT EXISTS delivery_keys (
    key INTEGER PRIMARY KEY,
    received_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS delivery_keys_received_at ON delivery_keys (received_at);
"""
_FORMER = "deliveries"
"""The table of the earlier layout, converted at open."""
_INSERT_BATCH = (
    "INSERT OR IGNORE INTO delivery_keys (key, received_at)"
    " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
)
"""A whole batch in one statement: one step of SQLite, not one (and a hand-over of the
GIL to the event loop and back) per row."""


def delivery_key(delivery_id: str) -> int:
    """The id's key in the file: the first 8 bytes of its BLAKE2b digest, as a signed
    64-bit integer (SQLite's INTEGER); the same in every process."""
    digest = hashlib.blake2b(delivery_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


class DeliveryStore:
    """Delivery keys in SQLite; every method may raise ``sqlite3.Error``."""

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
        self._convert()
        self._read_lock = self._lock
        """Guards ``_reader``."""
        self._reader = self._db
        if str(path) != ":memory:":  # another connection to ":memory:" is another database
            self._read_lock = threading.Lock()
            self._reader = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._reader.execute("PRAGMA busy_timeout=2000")

    def contains(self, delivery_id: str) -> bool:
        """Whether the id's key is committed (a batch being written is not waited for)."""
        with self._read_lock:
            row = self._reader.execute(
                "SELECT 1 FROM delivery_keys WHERE key = ?", (delivery_key(delivery_id),)
            )
            return row.fetchone() is not None

    def keys(self, after: int | None, limit: int) -> list[int]:
        """Up to ``limit`` stored keys greater than ``after`` (from the first when None), in
        order: a scan, page by page, that holds the connection for one page at a time."""
        with self._lock:
            if after is None:
                query = "SELECT key FROM delivery_keys ORDER BY key LIMIT ?"
                rows = self._db.execute(query, (limit,)).fetchall()
            else:
                query = "SELECT key FROM delivery_keys WHERE key > ? ORDER BY key LIMIT ?"
                rows = self._db.execute(query, (after, limit)).fetchall()
        return [int(row[0]) for row in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM delivery_keys").fetchone()[0])

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
                        "DELETE FROM delivery_keys WHERE key = ?",
                        [(delivery_key(d),) for d in deletes],
                    )
                if rows:
                    batch = [(delivery_key(i), at) for i, at in rows.items()]
                    self._db.execute(_INSERT_BATCH, (json.dumps(batch),))
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
                    key = delivery_key(delivery_id)
                    if op == ADDED:
                        self._db.execute(
                            "INSERT OR IGNORE INTO delivery_keys (key, received_at) VALUES (?, ?)",
                            (key, at),
                        )
                    elif op == FORGOTTEN:
                        self._db.execute("DELETE FROM delivery_keys WHERE key = ?", (key,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def prune(self, before: float) -> int:
        """Delete the keys received before ``before``; how many."""
        with self._lock:
            cursor = self._db.execute("DELETE FROM delivery_keys WHERE received_at < ?", (before,))
            return max(cursor.rowcount, 0)

    def _convert(self) -> None:
        """Move the ids of a file of the earlier layout into ``delivery_keys``, as keys."""
        former = self._db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_FORMER,)
        ).fetchone()
        if former is None:
            return
        self._db.create_function("delivery_key", 1, delivery_key, deterministic=True)
        self._db.execute("BEGIN")
        try:
            self._db.execute(
                "INSERT OR IGNORE INTO delivery_keys (key, received_at)"
                f" SELECT delivery_key(id), received_at FROM {_FORMER}"
            )
            self._db.execute(f"DROP TABLE {_FORMER}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._db.close()
