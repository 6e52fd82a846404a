"""The delivery log's SQLite file where the state directory does not exist yet: the store
creates every missing directory above it, and works there."""

from __future__ import annotations

from pathlib import Path

from webhooks.delivery_store import DeliveryStore


def test_a_store_under_directories_that_do_not_exist_yet_creates_them_all(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state" / "webhooks" / "deliveries.sqlite3"
    store = DeliveryStore(path)
    try:
        store.write({"github:a": 1.0}, [])
        assert store.newest(10) == [("github:a", 1.0)]
    finally:
        store.close()
    assert path.is_file()


def test_a_store_in_an_existing_directory_opens_it_again(tmp_path: Path) -> None:
    path = tmp_path / "deliveries.sqlite3"
    first = DeliveryStore(path)
    try:
        first.write({"github:a": 1.0}, [])
    finally:
        first.close()
    second = DeliveryStore(path)
    try:
        assert second.contains("github:a")
    finally:
        second.close()
