"""The daemon considers a full garbage collection ten times less often than CPython's
default, and leaves the young generations' thresholds as they are."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from promoter.daemon import collector


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_a_full_collection_is_considered_every_hundred_middle_ones() -> None:
    gc.set_threshold(700, 10, 10)
    collector.tune()
    assert gc.get_threshold() == (700, 10, collector.FULL_EVERY) == (700, 10, 100)


def test_the_young_generations_keep_what_the_process_set() -> None:
    gc.set_threshold(5000, 20, 10)
    collector.tune()
    assert gc.get_threshold()[:2] == (5000, 20)
