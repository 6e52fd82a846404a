"""The delivery log: which webhook deliveries were already handled, in memory and on disk.

A delivery id seen within the retention window is a duplicate (a redelivery or a
retry) and is not processed again.

Where ids live: in memory, those recorded since the start (up to ``memory_limit``,
newest kept); in the journal (``webhooks.deliveries.journal``) from ``persist`` until
their batch is in SQLite; in SQLite (``webhooks.deliveries.store``, as 64-bit keys) after
that, written by a thread of the log's own every ``flush_every`` seconds or ``batch``
ids, and on ``close``. The keys of the window that are not in memory (all of them after
a restart, and those of the ids that left memory) are also in a Bloom filter
(``webhooks.deliveries.id_filter``): a miss in memory is looked up in SQLite (the one disk read on
the caller's thread) only when the filter says the key may be there, about one new id
in a hundred. The writer thread builds a new filter from SQLite when the log starts
with ids in SQLite, and when the filter has taken more keys than it was sized for (it
cannot forget the pruned ones); until the first one is built, every miss is looked up.

Durability: the receiver records an id and, before answering, awaits one ``persist``
for every request the event loop handled in the same turn (``webhooks.deliveries.durable``): one
``write`` of a few lines to the journal, without fsync. From then on the id survives
the crash of the process (the journal is replayed into SQLite at start-up); an OS crash
or a power loss may undo the last appends, which costs no more than a redelivery
processed twice (webhooks only enqueue idempotent reconciles). The event loop never
writes SQLite. The files belong to one daemon; another process writing to them is not
seen until restart.

Concurrency: the check-and-record of an id is atomic within the process (one lock over
the ids in memory, taken after the batch lock and before the store's and the journal's
own), and the log is safe to use from any thread.

Memory: an id is held by its 64-bit key (the one SQLite stores), not by its text, and
the ids of one second share one time stamp, rounded up to the whole second (an id is
then kept in memory up to a second longer than the retention, never shorter): about
110 bytes an id, 11 MB at the default limit (200 bytes with the text and a time of its
own).
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from webhooks.deliveries.id_filter import IdFilter
from webhooks.deliveries.journal import ADDED, FORGOTTEN, Journal, encode, replay
from webhooks.deliveries.store import DeliveryStore, delivery_key

log = logging.getLogger("promoter.webhooks")

FILE_NAME = "webhook-deliveries.sqlite3"
MIN_RETENTION = 86400.0
"""Deliveries are remembered at least this long (seconds), whatever the configuration says."""
SCAN_PAGE = 4000
"""Keys read from SQLite at a time while a filter is built."""


class DeliveryLog:
    """``record(id)`` is True the first time an id is seen within ``retention`` seconds."""

    def __init__(
        self,
        path: Path | str,
        *,
        retention: float = 2 * MIN_RETENTION,
        prune_every: float = 60.0,
        flush_every: float = 2.0,
        batch: int = 4096,
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
        """Held around a whole batch (journal rotated, rows taken, committed)."""
        self._lock = threading.Lock()
        """Guards the ids in memory: ``_seen``, ``_pending``, ``_writing``, ``_deletes``
        and ``_unjournaled``."""
        self._pending: dict[int, float] = {}
        """Keys recorded, not yet taken by a batch, and when."""
        self._writing: dict[int, float] = {}
        """Taken by a batch, not yet committed: still recorded for lookups."""
        self._deletes: list[int] = []
        self._unjournaled: list[tuple[str, float, str]] = []
        """Entries not yet appended to the journal."""
        self._store = DeliveryStore(path)
        self._journal = (
            None if str(path) == ":memory:" else Journal(Path(path).with_suffix(".journal"))
        )
        self._recover()
        self._closed = False
        self._seen: OrderedDict[int, int] = OrderedDict()
        """Keys of the window by time received (the whole second, rounded up), oldest
        first (an ``OrderedDict``: taking the oldest out of a plain dict walks over every
        slot emptied before, growing cost)."""
        self._second = 0
        """The last time stamp given to ``_seen``, shared by the ids of that second."""
        now = clock()
        self._next_flush = now + flush_every
        self._next_prune = now
        self._prune(now)
        self._complete = self._store.count() == 0
        """Whether every id of the window is in memory (else misses are looked up)."""
        self._filter: IdFilter | None = None
        """The key of every id of the window that is in SQLite and not in memory (and of
        some that left both); None while ``_complete`` or until the writer has built the
        first one."""
        self._filter_due = not self._complete
        """The writer is to build a new filter from SQLite."""
        self._wake = threading.Event()
        self._writer = threading.Thread(
            target=self._write_behind, name="promoter-delivery-log", daemon=True
        )
        self._writer.start()
        if self._filter_due:
            self._wake.set()

    def record(self, delivery_id: str) -> bool:
        """Record a delivery; False when it was already recorded (a duplicate)."""
        key = delivery_key(delivery_id)
        now = self._clock()
        with self._lock:
            if self._known(key):
                return False
            second = math.ceil(now)
            if second != self._second:  # one int object a second, not one an id
                self._second = second
            self._seen[key] = self._second
            self._pending[key] = now
            self._unjournaled.append((ADDED, now, delivery_id))
            if len(self._seen) > self._memory_limit:
                self._leave_memory(self._seen.popitem(last=False)[0])
            if len(self._pending) >= self._batch or now >= self._next_flush:
                self._next_flush = now + self._flush_every
                self._wake.set()
            return True

    def forget(self, delivery_id: str) -> None:
        """Drop a delivery, so that a redelivery is processed (after a failed attempt)."""
        key = delivery_key(delivery_id)
        with self._lock:
            self._seen.pop(key, None)
            self._pending.pop(key, None)
            self._writing.pop(key, None)
            self._deletes.append(key)
            self._unjournaled.append((FORGOTTEN, self._clock(), delivery_id))
            self._wake.set()

    def persist(self) -> None:
        """Append what was recorded or forgotten since the last call to the journal, in one
        write: it then survives a crash of the process. ``OSError`` when it cannot."""
        with self._lock:
            self._unjournal()

    def flush(self) -> None:
        """Write the ids held in memory to SQLite, on the calling thread."""
        self._write_batch()

    def __len__(self) -> int:
        """Ids stored, after writing what is pending (and pruning, when due)."""
        self._write_batch()
        now = self._clock()
        if now >= self._next_prune:
            self._prune(now)
        return self._store.count()

    def close(self) -> None:
        """Write what is pending and close the files; idempotent."""
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
            if self._journal is not None:
                self._journal.close()

    # --- the writer ------------------------------------------------------------------

    def _write_behind(self) -> None:
        while not self._closed:
            self._wake.wait(self._flush_every)
            self._wake.clear()
            if self._closed:
                return
            try:
                self._write_batch()
                if self._filter_due:
                    self._build_filter()
                now = self._clock()
                if now >= self._next_prune:
                    self._prune(now)
            except (sqlite3.Error, OSError):
                log.warning("webhook delivery log write failed", exc_info=True)

    def _write_batch(self) -> None:
        """Commit what is pending to SQLite; then the journal's entries of it are dropped.

        The journal is rotated with the rows taken, under the same locks: every entry
        of the rotated file is in this batch or an earlier one. A failed commit leaves
        the rows pending (and the rotated file in place) for the next batch.
        """
        with self._batch_lock:
            journal = self._journal
            rotate = journal is not None and not journal.rotated.exists()
            with self._lock:
                self._unjournal()  # every entry of the batch is on disk before the rotation
                if rotate:
                    assert journal is not None
                    journal.rotate()
                rows, self._pending = self._pending, {}
                deletes, self._deletes = self._deletes, []
                self._writing.update(rows)
            try:
                self._store.write(rows, deletes)
            except BaseException:
                with self._lock:  # retried by the next batch, unless forgotten meanwhile
                    again = {i: at for i, at in rows.items() if self._writing.pop(i, None)}
                    self._pending = {**again, **self._pending}
                    self._deletes[:0] = deletes
                raise
            with self._lock:
                for key in rows:
                    self._writing.pop(key, None)
                if not self._writing:  # a dict keeps the table of its largest size
                    self._writing = {}
            if journal is not None:
                journal.drop()

    def _build_filter(self) -> None:
        """A new filter of every id in SQLite and every pending one, swapped in when whole.

        Under the batch lock nothing moves into SQLite while it is read: an id that is not
        in SQLite when the scan starts is still pending when the filter is swapped in. The
        ids are added page by page, outside ``_lock``: recording goes on meanwhile.
        """
        with self._batch_lock:
            stored = self._store.count()
            built = IdFilter(2 * max(stored + len(self._pending), self._memory_limit))
            for page in self._store.pages(SCAN_PAGE):
                if self._closed:
                    return
                built.update(page)
            if self._closed:
                return
            with self._lock:
                built.update(self._pending)
                self._filter, self._filter_due = built, False
            log.debug("webhook delivery filter built", extra={"ids": built.count})

    def _leave_memory(self, key: int) -> None:
        """Under ``_lock``: a key taken out of memory (the oldest); the filter keeps it."""
        if self._complete:  # the first to leave: every other id of the window is in memory
            self._complete = False
            self._filter = IdFilter(2 * self._memory_limit)
        if self._filter is not None:
            self._filter.add(key)
            if self._filter.full and not self._filter_due:
                self._filter_due = True
                self._wake.set()

    def _unjournal(self) -> None:
        """Under ``_lock`` (appends are ordered as the entries were made): append the
        entries not in the journal yet."""
        entries, self._unjournaled = self._unjournaled, []
        if entries and self._journal is not None:
            self._journal.append(encode(entries))

    def _recover(self) -> None:
        """Replay what the journal holds (ids a crash kept out of SQLite), then empty it."""
        if self._journal is None:
            return
        entries = [e for path in self._journal.files() for e in replay(path)]
        if entries:
            self._store.apply(entries)
            log.info("webhook delivery journal replayed", extra={"entries": len(entries)})
        self._journal.clear()

    # --- helpers ---------------------------------------------------------------------

    def _known(self, key: int) -> bool:
        """Under ``_lock``: recorded in memory, waiting to be written, or stored."""
        if key in self._seen or key in self._pending or key in self._writing:
            return True
        if self._complete or key in self._deletes:
            return False  # forgotten, not yet deleted from SQLite: not known any more
        if self._filter is not None and key not in self._filter:
            return False
        return self._store.contains(key)

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
        self._store.prune(cutoff)
