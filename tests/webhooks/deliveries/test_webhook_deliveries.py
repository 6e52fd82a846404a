"""The delivery log: duplicates are recognised, survive a restart, expire after the retention."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.support import wait_for
from webhooks.deliveries.durable import Durable
from webhooks.deliveries.journal import ADDED, FORGOTTEN, encode
from webhooks.deliveries.log import DeliveryLog
from webhooks.deliveries.store import delivery_key


def test_a_delivery_is_new_once_and_a_duplicate_afterwards(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3")
    assert log.record("github:a") is True
    assert log.record("github:a") is False
    assert log.record("gitlab:a") is True
    log.close()


def test_deliveries_are_remembered_across_a_restart(tmp_path: Path) -> None:
    first = DeliveryLog(tmp_path / "d.sqlite3")
    first.record("github:a")
    first.close()
    second = DeliveryLog(tmp_path / "d.sqlite3")
    assert second.record("github:a") is False
    second.close()


def test_the_log_is_in_wal_mode(tmp_path: Path) -> None:
    DeliveryLog(tmp_path / "d.sqlite3").close()
    with sqlite3.connect(tmp_path / "d.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_deliveries_older_than_the_retention_are_pruned(tmp_path: Path) -> None:
    now = [1_000_000.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=86400, prune_every=60, clock=lambda: now[0])
    log.record("github:old")
    now[0] += 86399
    assert log.record("github:old") is False  # still within a day
    log.record("github:newer")
    now[0] += 2
    assert len(log) == 1  # the old one pruned, when due
    assert log.record("github:old") is True  # forgotten: a day and more has passed
    assert log.record("github:newer") is False
    assert len(log) == 2
    log.close()


def test_pruning_happens_by_itself_while_recording(tmp_path: Path) -> None:
    now = [0.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=10, prune_every=5, clock=lambda: now[0])
    for i in range(5):
        log.record(f"github:{i}")
        now[0] += 3
    assert len(log) <= 5
    now[0] += 100
    log.record("github:last")
    assert len(log) == 1
    log.close()


def test_concurrent_recorders_see_each_delivery_exactly_once(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3")
    firsts: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        for i in range(200):
            if log.record(f"github:{i}"):
                with lock:
                    firsts.append(str(i))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(firsts, key=int) == [str(i) for i in range(200)]
    log.close()


def test_a_forgotten_delivery_is_new_again(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3")
    log.record("github:a")
    log.forget("github:a")
    assert log.record("github:a") is True
    log.close()


def test_past_the_memory_limit_older_ids_are_still_found_in_sqlite(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=3, batch=1)
    for i in range(10):
        assert log.record(f"github:{i}") is True
    assert all(log.record(f"github:{i}") is False for i in range(10))
    log.close()


def test_a_restart_with_more_ids_than_the_memory_limit_still_finds_them_all(tmp_path: Path) -> None:
    first = DeliveryLog(tmp_path / "d.sqlite3")
    for i in range(10):
        first.record(f"github:{i}")
    first.close()
    second = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=4)
    assert all(second.record(f"github:{i}") is False for i in range(10))
    assert second.record("github:new") is True
    second.close()
    second.close()  # closing twice is harmless


def test_the_deliveries_recorded_in_one_turn_of_the_loop_are_persisted_in_one_write(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    assert log._journal is not None
    appends: list[bytes] = []
    append = log._journal.append
    log._journal.append = lambda data: (appends.append(data), append(data))[1]  # type: ignore[method-assign]
    durable = Durable(log)

    async def deliver(n: int) -> bool:
        assert log.record(f"github:{n}")
        return await durable.stored()

    async def in_flight() -> list[bool]:
        return await asyncio.gather(*(deliver(n) for n in range(8)))

    assert asyncio.run(in_flight()) == [True] * 8
    assert len(appends) == 1
    crashed = tmp_path / "crashed"  # what the disk holds if the process dies now
    crashed.mkdir()
    for path in tmp_path.glob("d.*"):
        shutil.copy(path, crashed / path.name)
    log.close()
    restarted = DeliveryLog(crashed / "d.sqlite3")
    assert [n for n in range(8) if restarted.record(f"github:{n}")] == []
    assert len(restarted) == 8  # the journal was replayed into SQLite
    restarted.close()


def test_a_journal_cut_by_a_crash_is_replayed_up_to_its_last_whole_line(tmp_path: Path) -> None:
    journal = tmp_path / "d.journal"
    journal.write_bytes(
        encode(
            [(ADDED, 1e9, "github:a"), (ADDED, 1e9, "github:b\nc"), (FORGOTTEN, 1e9, "github:a")]
        )
        + encode([(ADDED, 1e9, "github:d")])[:-3]
    )
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=1e10)
    assert log.record("github:a") is True  # forgotten again in the journal
    assert log.record("github:b\nc") is False  # a newline in an id is escaped
    assert log.record("github:d") is True  # its line was cut
    log.close()


def test_an_id_evicted_from_memory_while_its_batch_is_written_is_still_a_duplicate(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=2, flush_every=60)
    writing, release = threading.Event(), threading.Event()
    write = log._store.write

    def slow_disk(rows: dict[int, float], deletes: list[int]) -> None:
        writing.set()
        assert release.wait(10)
        write(rows, deletes)

    log._store.write = slow_disk  # type: ignore[method-assign]
    assert log.record("github:a") is True
    flusher = threading.Thread(target=log.flush)
    flusher.start()
    assert writing.wait(10)  # github:a is taken by the batch, not yet in SQLite
    assert log.record("github:b") is True
    assert log.record("github:c") is True  # github:a leaves memory (the limit is 2)
    assert log.record("github:a") is False
    release.set()
    flusher.join(10)
    assert log.record("github:a") is False  # and in SQLite once the batch is committed
    log.close()


def stored(path: Path) -> int:
    """How many ids the SQLite file holds, read by another connection."""
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM generation_keys").fetchone()[0])
    finally:
        db.close()


def test_a_full_batch_wakes_the_writer_at_once(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", batch=2, flush_every=60)
    log.record("github:a")
    log.record("github:b")
    wait_for(lambda: stored(tmp_path / "d.sqlite3") == 2, what="the batch written")
    log.close()


def test_the_first_id_recorded_once_the_flush_is_due_wakes_the_writer(tmp_path: Path) -> None:
    now = [1000.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", batch=1000, flush_every=60, clock=lambda: now[0])
    now[0] += 60  # exactly when the flush is due
    log.record("github:a")
    wait_for(lambda: stored(tmp_path / "d.sqlite3") == 1, what="the id written")
    log.close()


def test_no_disk_is_read_on_the_recording_thread_while_every_id_fits_in_memory(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=3)
    reads = spy_on_lookups(log)
    for name in ("a", "b", "c", "d"):
        assert log.record(f"github:{name}") is True
    assert reads == []  # three ids in memory, then the fourth one missed there: none read
    log.close()


def spy_on_lookups(log: DeliveryLog) -> list[int]:
    """The keys the log looks up in SQLite from now on (the lookups still answer)."""
    reads: list[int] = []
    contains = log._store.contains

    def spied(key: int) -> bool:
        reads.append(key)
        return contains(key)

    log._store.contains = spied  # type: ignore[method-assign]
    return reads


def test_past_the_memory_limit_a_new_id_is_not_looked_up_and_an_old_one_is(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=100, flush_every=60)
    reads = spy_on_lookups(log)
    for n in range(300):  # 200 ids leave memory
        assert log.record(f"github:{n}") is True
    log.flush()
    assert reads == []  # each of the 300 was new: the filter said so, not SQLite
    assert all(log.record(f"github:{n}") is False for n in range(200))  # old: still known
    assert reads == [delivery_key(f"github:{n}") for n in range(200)]
    new = [f"gitlab:{n}" for n in range(1000)]
    reads.clear()
    assert all(log.record(delivery_id) for delivery_id in new)
    assert len(reads) <= 30  # the filter's false positives: about 1 %
    log.close()


def test_a_restart_past_the_memory_limit_builds_the_filter_and_reads_only_when_it_must(
    tmp_path: Path,
) -> None:
    first = DeliveryLog(tmp_path / "d.sqlite3")
    for n in range(500):
        first.record(f"github:{n}")
    first.close()
    second = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=50)
    wait_for(lambda: second._filter is not None, what="the filter built from SQLite")
    reads = spy_on_lookups(second)
    assert all(second.record(f"gitlab:{n}") for n in range(200))
    assert len(reads) <= 10
    assert [n for n in range(450) if second.record(f"github:{n}")] == []  # only on disk
    second.close()


def test_ids_recorded_while_the_filter_is_built_are_in_it(tmp_path: Path) -> None:
    first = DeliveryLog(tmp_path / "d.sqlite3")
    for n in range(20):
        first.record(f"github:old-{n}")
    first.close()
    second = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=5, flush_every=60)
    scanning, resume = threading.Event(), threading.Event()
    pages = second._store.pages

    def slow_scan(size: int) -> Iterator[list[int]]:
        scanning.set()
        assert resume.wait(10)
        yield from pages(size)

    second._store.pages = slow_scan  # type: ignore[method-assign]
    second._filter_due = True
    second._wake.set()
    assert scanning.wait(10)  # the writer holds the batch lock: these stay pending
    for n in range(10):
        assert second.record(f"github:new-{n}") is True  # the first five leave memory
    resume.set()
    wait_for(lambda: second._filter is not None and not second._filter_due, what="the filter")
    second.flush()
    assert [n for n in range(10) if second.record(f"github:new-{n}")] == []
    assert [n for n in range(20) if second.record(f"github:old-{n}")] == []
    second.close()


def test_a_filter_that_took_more_ids_than_it_was_sized_for_is_built_again(
    tmp_path: Path,
) -> None:
    now = [1000.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=2, retention=86400, clock=lambda: now[0])
    first = None
    for n in range(8):
        log.record(f"github:{n}")
        if n == 2:
            first = log._filter
    assert first is not None and first.capacity == 4
    wait_for(lambda: log._filter is not first and not log._filter_due, what="a new filter")
    assert [n for n in range(8) if log.record(f"github:{n}")] == []
    log.close()


def test_a_lookup_does_not_wait_for_a_batch_being_written(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=1)
    log.record("github:a")
    log.record("github:b")  # github:a is only on disk now
    log.flush()
    found: list[bool] = []
    with log._store._lock:  # as the writer holds it through a batch's commit
        key = delivery_key("github:a")
        reader = threading.Thread(target=lambda: found.append(log._store.contains(key)))
        reader.start()
        reader.join(5)
        assert found == [True]
    log.close()


def test_forgetting_an_id_no_longer_in_memory_drops_it_from_sqlite_too(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", memory_limit=1)
    log.record("github:a")
    log.record("github:b")  # github:a leaves memory
    log.flush()
    log.forget("github:a")
    log.forget("github:never-seen")
    assert log.record("github:a") is True
    log.forget("github:a")
    log.close()
    again = DeliveryLog(tmp_path / "d.sqlite3")
    assert again.record("github:a") is True  # the forgetting reached SQLite
    assert again.record("github:b") is False
    again.close()


def test_an_id_forgotten_while_its_batch_is_written_is_new_again(tmp_path: Path) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    writing, release = threading.Event(), threading.Event()
    write = log._store.write

    def slow_disk(rows: dict[int, float], deletes: list[int]) -> None:
        writing.set()
        assert release.wait(10)
        write(rows, deletes)

    log._store.write = slow_disk  # type: ignore[method-assign]
    log.record("github:a")
    flusher = threading.Thread(target=log.flush)
    flusher.start()
    assert writing.wait(10)
    log.forget("github:a")  # its processing failed: the redelivery must be processed
    assert log.record("github:a") is True
    release.set()
    flusher.join(10)
    log.close()


def test_pruning_is_due_exactly_one_period_after_the_last(tmp_path: Path) -> None:
    now = [1000.0]
    log = DeliveryLog(tmp_path / "d.sqlite3", retention=10, prune_every=60, clock=lambda: now[0])
    log.record("github:old")
    now[0] += 60
    assert len(log) == 0
    log.close()


def test_an_id_forgotten_and_recorded_again_in_one_batch_is_still_known_after_a_restart(
    tmp_path: Path,
) -> None:
    log = DeliveryLog(tmp_path / "d.sqlite3", flush_every=60)
    log.record("github:a")
    log.flush()
    log.forget("github:a")  # its dispatch failed: the redelivery is to be processed
    assert log.record("github:a") is True  # the redelivery, in the same batch
    log.close()
    again = DeliveryLog(tmp_path / "d.sqlite3")
    assert again.record("github:a") is False
    again.close()
