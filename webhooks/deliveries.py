"""The delivery log: which webhook deliveries were already handled, in memory and in SQLite.

A delivery id seen within the retention window is a duplicate (a redelivery or a
retry) and is not processed again.

Concurrency: the check-and-record of an id is atomic within the process (one lock
over the ids in memory), and the log is safe to use from any thread. ``record`` and
``forget`` never touch SQLite (past ``memory_limit`` ids a miss in memory is looked
up there, the one exception). Batches of ids are written by ``flush``, on the caller's
thread, and by a writer thread of the log's own; a lock taken around each whole batch
makes a ``flush`` return only once every id recorded before it is committed, whoever
took it.

Speed and durability: the receiver records an id, and before answering calls
``flush`` once for every request the event loop handled in the same turn (a group
commit: one transaction for all the deliveries in flight; see ``webhooks.durable``).
A commit is an append to the WAL without fsync: it survives the crash of the process;
an OS crash or a power loss may undo the last ones, which costs no more than a
redelivery processed twice (webhooks only enqueue idempotent reconciles). Ids that
nobody flushes are written every ``flush_every`` seconds or ``batch`` ids, and on
``close``. The writer thread also prunes expired ids and checkpoints the WAL, so that
a flush never does either. The file belongs to one daemon; another process writing
to it is not seen until restart.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from webhooks.delivery_store import DeliveryStore

log = logging.getLogger("promoter.webhooks")

FILE_NAME = "webhook-deliveries.sqlite3"
MIN_RETENTION = 86400.0
"""Deliveries are remembered at least this long (seconds), whatever the configuration says."""


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
        self._batch_lock = threading.Lock()
        """Held around a whole batch (taken, then committed); taken before ``_lock``."""
        self._lock = threading.Lock()
        """Guards the ids in memory: ``_seen``, ``_pending``, ``_writing``, ``_deletes``."""
        self._pending: dict[str, float] = {}
        """Recorded, not yet taken by a batch."""
        self._writing: dict[str, float] = {}
        """Taken by a batch, not yet committed: still recorded for lookups."""
        self._deletes: list[str] = []
        self._pruned = 0
        """Rows pruned from SQLite since the last ``prune()`` (under ``_lock``)."""
        self._store = DeliveryStore(path)
        self._closed = False
        self._seen: dict[str, float] = {}
        """Ids of the window by time received, oldest first."""
        now = clock()
        self._next_flush = now + flush_every
        self._next_prune = now
        self._prune(now)
        rows = self._store.newest(memory_limit + 1)
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
        """Commit every id recorded so far, on the calling thread; ``sqlite3.Error`` when
        the write fails (those ids stay recorded in memory, not on disk)."""
        self._write_batch()

    def prune(self) -> int:
        """Forget deliveries older than the retention; the number deleted from SQLite since
        the last call (the writer thread may have pruned some of them itself)."""
        self._write_batch()
        self._prune(self._clock())
        with self._lock:
            pruned, self._pruned = self._pruned, 0
        return pruned

    def __len__(self) -> int:
        """Ids stored, after writing what is pending (and pruning, when due)."""
        self._write_batch()
        self._maintain()
        return self._store.count()

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
            self._store.close()

    # --- the writer ------------------------------------------------------------------

    def _write_behind(self) -> None:
        while not self._closed:
            self._wake.wait(self._flush_every)
            self._wake.clear()
            if self._closed:
                return
            try:
                self._write_batch()
                self._maintain()
            except sqlite3.Error:
                log.warning("webhook delivery log write failed", exc_info=True)

    def _write_batch(self) -> None:
        """Take what is pending and commit it; returns once every earlier batch is committed."""
        with self._batch_lock:
            with self._lock:
                rows, self._pending = self._pending, {}
                deletes, self._deletes = self._deletes, []
                self._writing.update(rows)
            try:  # on failure these are lost: at worst a redelivery is processed twice
                self._store.write(rows, deletes)
            finally:
                with self._lock:
                    for delivery_id in rows:
                        self._writing.pop(delivery_id, None)

    def _maintain(self) -> None:
        """Prune when due, and move the WAL into the database (off the event loop)."""
        now = self._clock()
        if now >= self._next_prune:
            self._prune(now)
        self._store.checkpoint()

    # --- helpers ---------------------------------------------------------------------

    def _known(self, delivery_id: str) -> bool:
        """Under ``_lock``: recorded in memory, waiting to be written, or stored."""
        if delivery_id in self._seen or delivery_id in self._pending:
            return True
        if delivery_id in self._writing:
            return True
        if self._complete:
            return False
        return self._store.contains(delivery_id)

    def _prune(self, now: float) -> None:
        """Forget the ids older than the retention, in memory and in SQLite."""
        self._next_prune = now + self._prune_every
        cutoff = now - self.retention
        with self._lock:
            seen = self._seen
            while seen:
                oldest = next(iter(seen))
                if seen[oldest] >= cutoff:
                    break
                del seen[oldest]
        pruned = self._store.prune(cutoff)
        with self._lock:
            self._pruned += pruned
