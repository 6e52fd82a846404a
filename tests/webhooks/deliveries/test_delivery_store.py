"""The delivery log's SQLite file alone: a batch of journal entries lands whole or not at all;
keys are written in generations, looked up, forgotten and pruned across them; a file of
an earlier layout (the ids' text, or one table of keys) is converted when opened."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhooks.deliveries.journal import ADDED, FORGOTTEN
from webhooks.deliveries.log import DeliveryLog
from webhooks.deliveries.store import DeliveryStore, delivery_key


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
        found = [store.contains(delivery_key(i)) for i in ("half", "kept")]
        assert [*found, store.count()] == [False, True, 1]
        store.apply([(ADDED, 3.0, "after"), (FORGOTTEN, 3.0, "kept")])
    finally:
        store.close()
    reopened = DeliveryStore(tmp_path / "deliveries.sqlite")
    try:
        found = [reopened.contains(delivery_key(i)) for i in ("after", "kept")]
        assert [*found, reopened.count()] == [True, False, 1]
    finally:
        reopened.close()


def test_a_file_of_the_earlier_layout_is_converted_and_its_ids_are_still_duplicates(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite3"
    now = 1e9
    earlier_file(path, TEXT_IDS, [(f"github:{n}", now + n) for n in range(5)])
    log = DeliveryLog(path, memory_limit=2, clock=lambda: now + 10)
    try:
        assert [n for n in range(5) if log.record(f"github:{n}")] == []
        assert log.record("github:new") is True
    finally:
        log.close()
    tables, rows = read_file(path)
    assert tables == {"generations", "generation_keys"}
    assert rows[delivery_key("github:3")] == now + 3  # the time received is kept
    assert len(rows) == 6


TEXT_IDS = (
    """
    CREATE TABLE deliveries (id TEXT PRIMARY KEY, received_at REAL NOT NULL) WITHOUT ROWID;
    CREATE INDEX deliveries_received_at ON deliveries (received_at);
    """,
    "deliveries",
)
"""The first layout: the ids' text."""
ONE_TABLE = (
    """
    CREATE TABLE delivery_keys (key INTEGER PRIMARY KEY, received_at REAL NOT NULL);
    CREATE INDEX delivery_keys_received_at ON delivery_keys (received_at);
    """,
    "delivery_keys",
)
"""The second layout: the ids' keys, in one table."""


def earlier_file(path: Path, layout: tuple[str, str], rows: list[tuple[object, float]]) -> None:
    """A file of an earlier ``layout`` (its schema, its table) holding ``rows``."""
    schema, table = layout
    db = sqlite3.connect(path)
    try:
        db.executescript(schema)
        db.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
        db.commit()
    finally:
        db.close()


def read_file(path: Path) -> tuple[set[str], dict[int, float]]:
    """The file's tables, and its keys with the time each was received."""
    db = sqlite3.connect(path)
    try:
        tables = {
            row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        rows = dict(db.execute("SELECT key, received_at FROM generation_keys").fetchall())
    finally:
        db.close()
    return tables, rows


def test_a_file_of_one_table_of_keys_is_converted_into_generations_oldest_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "d.sqlite3"
    now = 1e9
    earlier_file(
        path, ONE_TABLE, [(delivery_key(f"github:{n}"), now + n) for n in reversed(range(7))]
    )
    store = DeliveryStore(path, generation_keys=3)
    try:
        assert all(store.contains(delivery_key(f"github:{n}")) for n in range(7))
        assert store.generations() == 3 and store.count() == 7
        assert store.prune(now + 3) == 3  # the first generation, github:0 to 2, whole
        assert store.generations() == 2
        assert [n for n in range(7) if store.contains(delivery_key(f"github:{n}"))] == [3, 4, 5, 6]
    finally:
        store.close()
    tables, rows = read_file(path)
    assert tables == {"generations", "generation_keys"}
    assert rows[delivery_key("github:5")] == now + 5


def test_keys_go_to_the_newest_generation_until_it_has_taken_its_share(
    tmp_path: Path,
) -> None:
    """A batch lands in one generation (never split); the next batch begins a new one
    once the newest has taken ``generation_keys``. Lookups, forgetting and the scan of
    every key reach every generation."""
    store = DeliveryStore(tmp_path / "d.sqlite3", generation_keys=4)
    try:
        store.write({delivery_key(f"a{n}"): 1.0 for n in range(3)}, [])
        store.write({delivery_key(f"b{n}"): 2.0 for n in range(3)}, [])  # 6 in the first
        store.write({delivery_key(f"c{n}"): 3.0 for n in range(2)}, [])
        store.write({delivery_key(f"d{n}"): 4.0 for n in range(5)}, [])
        assert store.generations() == 2  # a, b | c, d (the next batch begins the third)
        held = generation_of(tmp_path / "d.sqlite3")
        assert {held[delivery_key(i)] for i in ("a0", "b2")} == {0}
        assert {held[delivery_key(i)] for i in ("c0", "d4")} == {1}
        everything = [
            f"{p}{n}" for p, k in (("a", 3), ("b", 3), ("c", 2), ("d", 5)) for n in range(k)
        ]
        assert all(store.contains(delivery_key(i)) for i in everything)
        assert not store.contains(delivery_key("e0"))
        scanned = [key for page in store.pages(2) for key in page]
        assert sorted(scanned) == sorted(delivery_key(i) for i in everything)
        store.write({}, [delivery_key("a1"), delivery_key("d3")])  # forgotten, wherever they are
        assert not store.contains(delivery_key("a1")) and not store.contains(delivery_key("d3"))
        assert store.count() == len(everything) - 2
    finally:
        store.close()


def generation_of(path: Path) -> dict[int, int]:
    db = sqlite3.connect(path)
    try:
        return dict(db.execute("SELECT key, generation FROM generation_keys").fetchall())
    finally:
        db.close()


def test_a_prune_drops_old_generations_whole_and_trims_the_one_across_the_cutoff(
    tmp_path: Path,
) -> None:
    store = DeliveryStore(tmp_path / "d.sqlite3", generation_keys=2)
    try:
        for n in range(8):  # generations of two: (0, 1), (2, 3), (4, 5), (6, 7)
            store.write({delivery_key(f"github:{n}"): 100.0 + n}, [])
        assert store.generations() == 4
        assert store.prune(103.0) == 3  # 0 and 1 whole, 2 from the one across the cutoff
        kept = [n for n in range(8) if store.contains(delivery_key(f"github:{n}"))]
        assert kept == [3, 4, 5, 6, 7]
        assert store.generations() == 3
        assert store.prune(103.0) == 0  # the generation's oldest key was taken again
        assert store.prune(200.0) == 5
        assert store.count() == 0
        store.write({delivery_key("github:new"): 300.0}, [])  # into a generation begun anew
        assert store.generations() == 1 and store.contains(delivery_key("github:new"))
    finally:
        store.close()


def test_a_journal_replayed_over_what_is_stored_adds_no_key_twice(tmp_path: Path) -> None:
    """A crash after a batch's commit and before its journal was dropped replays ids that
    are stored already, into another generation: each stays stored once."""
    store = DeliveryStore(tmp_path / "d.sqlite3", generation_keys=1)
    try:
        store.write({delivery_key("github:a"): 1.0}, [])
        store.write({delivery_key("github:b"): 2.0}, [])
        store.apply([(ADDED, 1.0, "github:a"), (ADDED, 2.0, "github:b"), (ADDED, 3.0, "c")])
        assert store.count() == 3
        store.apply([(FORGOTTEN, 4.0, "github:a")])
        assert not store.contains(delivery_key("github:a")) and store.count() == 2
    finally:
        store.close()


def test_a_delivery_key_is_the_one_every_earlier_file_holds() -> None:
    """The key is what SQLite files written by every earlier version hold: the first 8
    bytes of the id's BLAKE2b digest, big-endian and signed (a lone surrogate, which
    no UTF-8 encodes, included)."""
    assert delivery_key("github:72d3162e-cc78-11e3-81ab-4c9367dc0958") == 8392578264905739510
    assert delivery_key("gitlab:\udcff") == -4479980587544617877
    assert delivery_key("a") != delivery_key("b")
