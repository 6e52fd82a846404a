"""The delivery log at its edges: pruning once a period and keeping an id exactly one
retention old, the writer thread's own timer and prune, the journal emptied once its
batch is committed, a batch whose commit fails while ids are forgotten meanwhile, and
SQLite never written on the thread that records (the event loop's)."""

from __future__ import annotations

import gc
import sqlite3
import threading
import tracemalloc
import uuid
from collections.abc import Callable
from pathlib import Path

from tests.support import wait_for
from webhooks.deliveries.journal import replay
from webhooks.deliveries.log import DeliveryLog
from webhooks.deliveries.store import delivery_key


def stored(path: Path) -> set[int]:
    """The keys the SQLite file holds, read by another connection."""
    db = sqlite3.connect(path)
    try:
        return {int(row[0]) for row in db.execute("SELECT key FROM generation_keys")}
    finally:
        db.close()


def keys(*ids: str) -> set[int]:
    return {delivery_key(delivery_id) for delivery_id in ids}


def journaled(log: DeliveryLog) -> list[str]:
    """The ids the journal's files still hold (what a restart would replay)."""
    assert log._journal is not None
    return [entry[2] for path in log._journal.files() for entry in replay(path)]


class FailingDisk:
    """The store's ``write``, whose first call holds until released, then fails."""

    def __init__(self, write: Callable[[dict[int, float], list[int]], None]) -> None:
        self.write = write
        self.writing = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, rows: dict[int, float], deletes: list[int]) -> None:
        self.calls += 1
        if self.calls > 1:
            self.write(rows, deletes)
            return
        self.writing.set()
        assert self.release.wait(10)
        raise sqlite3.OperationalError("disk I/O error")


def failing_flush(log: DeliveryLog) -> tuple[FailingDisk, threading.Thread, list[Exception]]:
    """A ``flush`` on another thread, held inside its failing commit."""
    disk = FailingDisk(log._store.write)
    log._store.write = disk  # type: ignore[method-assign]
    raised: list[Exception] = []

    def flush() -> None:
        try:
            log.flush()
        except Exception as exc:  # handed to the test
            raised.append(exc)

    flusher = threading.Thread(target=flush)
    flusher.start()
    assert disk.writing.wait(10)
    return disk, flusher, raised


def test_pruning_waits_for_its_period_an_expired_id_stays_until_then(tmp_path: Path) -> None:
    now = [1000.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=10, prune_every=60, clock=lambda: now[0])
    try:
        log.record("github:old")
        now[0] = 1020.0  # expired, but the last prune (at start) was 20 s ago
        assert len(log) == 1
        assert log.record("github:old") is False
        now[0] = 1060.0
        assert len(log) == 0
    finally:
        log.close()


def test_an_id_within_the_retention_by_a_fraction_of_a_second_is_still_a_duplicate(
    tmp_path: Path,
) -> None:
    """The ids of one second share a time stamp in memory, rounded up: an id is never
    forgotten before its retention has passed."""
    now = [1000.5]
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=100, prune_every=1, clock=lambda: now[0])
    try:
        log.record("github:a")
        now[0] = 1100.45  # 99.95 s later
        assert len(log) == 1  # pruned now
        assert log.record("github:a") is False
        now[0] = 1102.0
        assert len(log) == 0
        assert log.record("github:a") is True
    finally:
        log.close()


def test_an_id_held_in_memory_costs_its_key_and_its_place_not_its_text(tmp_path: Path) -> None:
    """Once written to SQLite, an id in memory is its 64-bit key, a share of its second's
    time stamp and its place in the window: about 110 bytes (200 with the id's text and a
    time of its own, and the table of the batch it was written in)."""
    now = [1_000_000.0]

    def clock() -> float:
        now[0] += 0.01  # a hundred deliveries a second
        return now[0]

    log = DeliveryLog(tmp_path / "d.sqlite3", clock=clock, flush_every=1e9, batch=1 << 30)
    count = 20_000
    try:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for n in range(count):
                assert log.record(f"github:{uuid.UUID(int=n * 7919)}")
                if n % 100 == 99:
                    log.persist()  # as the receiver does every turn of the event loop
            log.persist()
            log.flush()
            gc.collect()
            per_id = (tracemalloc.get_traced_memory()[0] - before) / count
        finally:
            tracemalloc.stop()
        assert per_id < 130, per_id
        assert log.record(f"github:{uuid.UUID(int=7919)}") is False
    finally:
        log.close()


def test_an_id_exactly_one_retention_old_is_still_a_duplicate_after_a_prune(
    tmp_path: Path,
) -> None:
    now = [1000.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=100, prune_every=1, clock=lambda: now[0])
    try:
        log.record("github:a")
        now[0] = 1100.0
        assert len(log) == 1  # pruned now: received at the cutoff, kept
        assert log.record("github:a") is False
    finally:
        log.close()


def test_the_writer_writes_ids_recorded_within_a_period_once_the_period_ends(
    tmp_path: Path,
) -> None:
    """No record wakes it (the flush is not due by the log's clock): its own timer does."""
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=0.05, batch=1000, clock=lambda: 1e9)
    try:
        log.record("github:a")
        wait_for(
            lambda: stored(tmp_path / "d.sqlite3") == keys("github:a"),
            timeout=5,
            what="the id written",
        )
    finally:
        log.close()


def test_the_writer_prunes_when_the_prune_is_due_exactly(tmp_path: Path) -> None:
    now = [1000.0]
    log = DeliveryLog(
        tmp_path / "d.sqlite3",
        retention=10,
        prune_every=60,
        batch=1,
        flush_every=60,
        clock=lambda: now[0],
    )
    try:
        log.record("github:old")
        wait_for(
            lambda: stored(tmp_path / "d.sqlite3") == keys("github:old"),
            timeout=5,
            what="the first batch",
        )
        now[0] = 1060.0  # one period after the prune at start
        log.record("github:new")  # a full batch: wakes the writer, which prunes
        wait_for(
            lambda: stored(tmp_path / "d.sqlite3") == keys("github:new"),
            timeout=5,
            what="the old id pruned",
        )
    finally:
        log.close()


def test_a_committed_batch_leaves_nothing_of_it_in_the_journal(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    try:
        log.record("github:a")
        log.persist()
        assert journaled(log) == ["github:a"]
        log.flush()
        assert journaled(log) == []
        log.record("github:b")
        log.persist()
        assert journaled(log) == ["github:b"]
        log.flush()
        assert journaled(log) == []
        assert stored(tmp_path / "d.sqlite3") == keys("github:a", "github:b")
    finally:
        log.close()


def test_an_id_forgotten_while_its_batch_fails_is_dropped_and_the_rest_retried(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    try:
        log.record("github:a")
        log.record("github:b")
        disk, flusher, raised = failing_flush(log)
        log.forget("github:a")  # its processing failed meanwhile
        disk.release.set()
        flusher.join(10)
        assert [type(exc) for exc in raised] == [sqlite3.OperationalError]
        log.flush()
        assert stored(tmp_path / "d.sqlite3") == keys("github:b")
    finally:
        log.close()
    again = DeliveryLog(tmp_path / "d.sqlite3")
    try:
        assert [again.record("github:a"), again.record("github:b")] == [True, False]
    finally:
        again.close()


def test_a_forget_made_while_a_batch_fails_still_reaches_sqlite(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    try:
        log.record("github:old")
        log.flush()
        log.record("github:new")
        disk, flusher, raised = failing_flush(log)
        log.forget("github:old")  # waits for the next batch
        disk.release.set()
        flusher.join(10)
        assert [type(exc) for exc in raised] == [sqlite3.OperationalError]
        log.flush()
        assert stored(tmp_path / "d.sqlite3") == keys("github:new")
    finally:
        log.close()


def test_the_delivery_log_never_writes_sqlite_on_the_recording_thread(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", batch=1, flush_every=0.01)
    writers: set[str] = set()
    db = log._store._db
    db.set_trace_callback(lambda statement: writers.add(threading.current_thread().name))
    for i in range(50):
        assert log.record(f"github:{i}")
    log.forget("github:7")

    def stored() -> int | None:
        with sqlite3.connect(tmp_path / "d.sqlite3") as db:
            count = int(db.execute("SELECT count(*) FROM generation_keys").fetchone()[0])
        db.close()
        return count if count == 49 else None

    wait_for(stored, what="the ids written behind")
    assert writers and threading.current_thread().name not in writers
    log.close()
