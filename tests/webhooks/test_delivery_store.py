"""The delivery log's SQLite file alone: a batch of journal entries lands whole or not at all;
a file of the earlier layout (the ids' text) is converted to keys when opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhooks.deliveries import DeliveryLog
from webhooks.delivery_journal import ADDED, FORGOTTEN
from webhooks.delivery_store import DeliveryStore, delivery_key


class Interrupted(Exception):
    pass


def cut_short(entries: list[tuple[str, float, str]]) -> Iterator[tuple[str, float, str]]:
    """The entries, then a failure, as a journal read that breaks half way."""
    yield from entries
    raise Interrupted


def test_journal_entries_that_fail_half_way_leave_the_file_as_it_was_and_usable(
    tmp_path: Path,
) -> None:
    store = DeliveryStore(tmp_path / "deliveries.sqlite")
    try:
        store.apply([(ADDED, 1.0, "kept")])
        with pytest.raises(Interrupted):
            store.apply(cut_short([(ADDED, 2.0, "half"), (FORGOTTEN, 2.0, "kept")]))
        assert [store.contains("half"), store.contains("kept"), store.count()] == [False, True, 1]
        store.apply([(ADDED, 3.0, "after"), (FORGOTTEN, 3.0, "kept")])
    finally:
        store.close()
    reopened = DeliveryStore(tmp_path / "deliveries.sqlite")
    try:
        assert [reopened.contains("after"), reopened.contains("kept"), reopened.count()] == [
            True,
            False,
            1,
        ]
    finally:
        reopened.close()


def test_a_file_of_the_earlier_layout_is_converted_and_its_ids_are_still_duplicates(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE deliveries (id TEXT PRIMARY KEY, received_at REAL NOT NULL) WITHOUT ROWID;
        CREATE INDEX deliveries_received_at ON deliveries (received_at);
        """
    )
    now = 1e9
    db.executemany(
        "INSERT INTO deliveries VALUES (?, ?)", [(f"github:{n}", now + n) for n in range(5)]
    )
    db.commit()
    db.close()
    log = DeliveryLog(path, memory_limit=2, clock=lambda: now + 10)
    try:
        assert [n for n in range(5) if log.record(f"github:{n}")] == []
        assert log.record("github:new") is True
    finally:
        log.close()
    db = sqlite3.connect(path)
    try:
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        rows = dict(db.execute("SELECT key, received_at FROM delivery_keys").fetchall())
    finally:
        db.close()
    assert tables == {"delivery_keys"}
    assert rows[delivery_key("github:3")] == now + 3  # the time received is kept
    assert len(rows) == 6
