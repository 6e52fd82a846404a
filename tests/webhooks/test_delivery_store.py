"""The delivery log's SQLite file alone: a batch of journal entries lands whole or not at all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from webhooks.delivery_journal import ADDED, FORGOTTEN
from webhooks.delivery_store import DeliveryStore


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
        assert reopened.newest(10) == [("after", 3.0)]
    finally:
        reopened.close()
