"""The delivery log's SQLite file where the state directory does not exist yet: the store
creates every missing directory above it, and works there; a write that fails half-way
leaves nothing of it, and the next write works."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webhooks.deliveries.store import DeliveryStore
from webhooks.deliveries.store import delivery_key as k


def test_a_store_under_directories_that_do_not_exist_yet_creates_them_all(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state" / "webhooks" / "deliveries.sqlite3"
    store = DeliveryStore(path)
    try:
        store.write({k("github:a"): 1.0}, [])
        assert store.contains(k("github:a")) and store.count() == 1
    finally:
        store.close()
    assert path.is_file()


def test_a_store_in_an_existing_directory_opens_it_again(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    first = DeliveryStore(path)
    try:
        first.write({k("github:a"): 1.0}, [])
    finally:
        first.close()
    second = DeliveryStore(path)
    try:
        assert second.contains(k("github:a"))
    finally:
        second.close()


def test_a_write_that_fails_half_way_leaves_nothing_and_the_next_one_works(
    tmp_path: Path,
) -> None:
    store = DeliveryStore(tmp_path / "deliveries.sqlite3")
    try:
        store.write({k("github:a"): 1.0}, [])
        unwritable: dict[int, Any] = {k("github:b"): object()}
        with pytest.raises(TypeError):
            store.write(unwritable, [k("github:a")])
        assert store.contains(k("github:a")) and not store.contains(k("github:b"))
        store.write({k("github:c"): 3.0}, [k("github:a")])
        assert store.contains(k("github:c")) and not store.contains(k("github:a"))
        assert store.count() == 1
    finally:
        store.close()
