"""The delivery log's SQLite file: a key per delivery id and when it arrived, in WAL mode.

What is stored of an id is its key, a 64-bit hash (``delivery_key``). With the id's
text each row was about three times larger. Two different ids share a key with a chance
of about n² / 2⁶⁵ for n ids in the window (3 in 100 million at a million): the second
one would be taken for a duplicate, and the periodic resync would still see its change.

Generations: keys are written into the newest generation until it has taken
``generation_keys`` (65,536), then into a new one; a row is ``(generation, key,
received_at)``, ordered by generation first. A batch of random keys (GitHub's ids are
UUIDs) then lands among the pages of one generation, not of the whole window: in one
table ordered by key, each batch dirtied most of its pages, and an insert cost more the
larger the window (docs/performance.md, section 4, "The delivery log past its memory
bound"). A lookup asks each generation (one primary-key search each); the log makes one
only when its Bloom filter says the id may be stored. Pruning drops a generation whole
once its newest key is older than the cutoff, and the keys older than it from the
generation that straddles it.

A file of an earlier layout (the ids' text, table ``deliveries``; or one table of keys,
``delivery_keys``) is converted when it is opened, the time each id was received kept.

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
from collections.abc import Iterable, Iterator
from pathlib import Path

from webhooks.deliveries.journal import ADDED, FORGOTTEN

GENERATION_KEYS = 65_536
"""Keys a generation takes before the next one is begun."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS generations (
    generation INTEGER PRIMARY KEY,
    taken INTEGER NOT NULL,
    oldest REAL NOT NULL,
    newest REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS generation_keys (
    generation INTEGER NOT NULL,
    key INTEGER NOT NULL,
    received_at REAL NOT NULL,
    PRIMARY KEY (generation, key)
) WITHOUT ROWID;
"""
_EARLIER = {
    "deliveries": "SELECT delivery_key(id) AS key, received_at FROM deliveries",
    "delivery_keys": "SELECT key, received_at FROM delivery_keys",
}
"""The tables of the earlier layouts, converted at open, and how to read their keys."""
_INSERT_BATCH = (
    "INSERT OR IGNORE INTO generation_keys (generation, key, received_at)"
    " SELECT ?, json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
)
"""A whole batch in one statement: one step of SQLite, not one (and a hand-over of the
GIL to the event loop and back) per row."""
_CONTAINS = (
    "SELECT 1 FROM generation_keys"
    " WHERE generation IN (SELECT generation FROM generations) AND key = ? LIMIT 1"
)
_DELETE = (
    "DELETE FROM generation_keys"
    " WHERE generation IN (SELECT generation FROM generations) AND key = ?"
)


_BLAKE2B_8 = hashlib.blake2b(digest_size=8)
"""Copied for each key, never updated: cheaper than a hash object made with its
parameters each time (docs/performance.md; the receiver makes one key a delivery)."""


def delivery_key(delivery_id: str) -> int:
    """The id's key in the file: the first 8 bytes of its BLAKE2b digest, as a signed
    64-bit integer (SQLite's INTEGER); the same in every process."""
    digest = _BLAKE2B_8.copy()
    digest.update(delivery_id.encode("utf-8", "surrogatepass"))
    return int.from_bytes(digest.digest(), "big", signed=True)


class DeliveryStore:
    """Delivery keys in SQLite; every method may raise ``sqlite3.Error``."""

    def __init__(self, path: Path | str, *, generation_keys: int = GENERATION_KEYS) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.generation_keys = generation_keys
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

    def contains(self, key: int) -> bool:
        """Whether the key (``delivery_key``) is committed (a batch being written is not
        waited for)."""
        with self._read_lock:
            row = self._reader.execute(_CONTAINS, (key,))
            return row.fetchone() is not None

    def pages(self, size: int) -> Iterator[list[int]]:
        """Every stored key, ``size`` at a time: a scan in the file's order that holds the
        connection for one page at a time (a key stored twice, in two generations, comes
        twice)."""
        after = (-1, 0)  # before the first generation
        while True:
            with self._lock:
                rows = self._db.execute(
                    "SELECT generation, key FROM generation_keys WHERE (generation, key) > (?, ?)"
                    " ORDER BY generation, key LIMIT ?",
                    (*after, size),
                ).fetchall()
            if not rows:
                return
            after = rows[-1]
            yield [int(row[1]) for row in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM generation_keys").fetchone()[0])

    def generations(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM generations").fetchone()[0])

    def write(self, rows: dict[int, float], deletes: list[int]) -> None:
        """Drop the keys ``deletes``, then add ``rows`` (key: time received), in one
        transaction (nothing when both are empty). In that order: an id forgotten and then
        recorded again is in both, and stays (one recorded and then forgotten is only in
        ``deletes``)."""
        if not rows and not deletes:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                if deletes:
                    self._db.executemany(_DELETE, [(key,) for key in deletes])
                if rows:
                    self._add(list(rows.items()))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def apply(self, entries: Iterable[tuple[str, float, str]]) -> None:
        """Journal entries, in order, in one transaction: ``+`` adds an id (unless it is
        stored already), ``-`` drops it."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                for op, at, delivery_id in entries:
                    key = delivery_key(delivery_id)
                    if op == ADDED:
                        if self._db.execute(_CONTAINS, (key,)).fetchone() is None:
                            self._add([(key, at)])
                    elif op == FORGOTTEN:
                        self._db.execute(_DELETE, (key,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def prune(self, before: float) -> int:
        """Delete the keys received before ``before``; how many."""
        deleted = 0
        with self._lock:
            self._db.execute("BEGIN")
            try:
                reached = self._db.execute(
                    "SELECT generation, newest FROM generations WHERE oldest < ?", (before,)
                ).fetchall()
                for generation, newest in reached:
                    if newest < before:
                        cursor = self._db.execute(
                            "DELETE FROM generation_keys WHERE generation = ?", (generation,)
                        )
                    else:
                        cursor = self._db.execute(
                            "DELETE FROM generation_keys WHERE generation = ? AND received_at < ?",
                            (generation, before),
                        )
                    deleted += max(cursor.rowcount, 0)
                    self._settle(generation)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return deleted

    def close(self) -> None:
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._db.close()

    # --- under ``_lock``, in a transaction ----------------------------------------------

    def _add(self, keys: list[tuple[int, float]], *, begin: bool = False) -> None:
        """Add ``(key, received_at)`` pairs to the newest generation, begun anew first when
        the newest has taken its share or ``begin`` (a batch is never split)."""
        row = self._db.execute(
            "SELECT generation, taken FROM generations ORDER BY generation DESC LIMIT 1"
        ).fetchone()
        times = [at for _, at in keys]
        oldest, newest = min(times), max(times)
        if row is None or begin or row[1] >= self.generation_keys:
            generation = 0 if row is None else row[0] + 1
            self._db.execute(
                "INSERT INTO generations (generation, taken, oldest, newest) VALUES (?, 0, ?, ?)",
                (generation, oldest, newest),
            )
        else:
            generation = row[0]
        cursor = self._db.execute(_INSERT_BATCH, (generation, json.dumps(keys)))
        self._db.execute(
            "UPDATE generations SET taken = taken + ?, oldest = min(oldest, ?),"
            " newest = max(newest, ?) WHERE generation = ?",
            (max(cursor.rowcount, 0), oldest, newest, generation),
        )

    def _settle(self, generation: int) -> None:
        """After keys of ``generation`` were pruned: drop it when it is empty, else record
        its oldest key's time again."""
        left = self._db.execute(
            "SELECT min(received_at) FROM generation_keys WHERE generation = ?", (generation,)
        ).fetchone()[0]
        if left is None:
            self._db.execute("DELETE FROM generations WHERE generation = ?", (generation,))
        else:
            self._db.execute(
                "UPDATE generations SET oldest = ? WHERE generation = ?", (left, generation)
            )

    def _convert(self) -> None:
        """Move the keys of a file of an earlier layout into generations, oldest first."""
        tables = {
            row[0]
            for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        earlier = [name for name in _EARLIER if name in tables]
        if not earlier:
            return
        self._db.create_function("delivery_key", 1, delivery_key, deterministic=True)
        self._db.execute("BEGIN")
        try:
            for name in earlier:
                first = self._db.execute(
                    "SELECT coalesce(max(generation) + 1, 0) FROM generations"
                ).fetchone()[0]
                self._db.execute(
                    "INSERT OR IGNORE INTO generation_keys (generation, key, received_at)"
                    " SELECT ? + (row_number() OVER (ORDER BY received_at) - 1) / ?,"
                    f" key, received_at FROM ({_EARLIER[name]})",
                    (first, self.generation_keys),
                )
                self._db.execute(
                    "INSERT INTO generations (generation, taken, oldest, newest)"
                    " SELECT generation, count(*), min(received_at), max(received_at)"
                    " FROM generation_keys WHERE generation >= ? GROUP BY generation",
                    (first,),
                )
                self._db.execute(f"DROP TABLE {name}")
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
