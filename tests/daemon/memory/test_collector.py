"""The daemon collects its youngest generation less often than CPython's default, and
considers a full garbage collection ten times less often."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from promoter.daemon.memory import collector


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_cpythons_defaults_become_the_daemons() -> None:
    gc.set_threshold(700, 10, 10)
    collector.tune()
    assert gc.get_threshold() == (collector.YOUNG, 10, collector.FULL_EVERY) == (10_000, 10, 100)


def test_a_higher_young_threshold_and_the_middle_one_the_process_set_are_kept() -> None:
    gc.set_threshold(50_000, 20, 10)
    collector.tune()
    assert gc.get_threshold() == (50_000, 20, 100)


def test_a_reconciles_worth_of_short_lived_cycles_triggers_no_collection() -> None:
    """What a reconcile makes and drops (here 4,000 lists that hold themselves) no
    longer runs the collector in the middle of it (at CPython's 700: five times)."""
    collector.tune()
    gc.collect()
    runs: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    gc.callbacks.append(counted)
    try:
        kept = []
        for _ in range(4_000):
            a: list[object] = []
            a.append(a)
            kept.append(a)
        del kept
    finally:
        gc.callbacks.remove(counted)
    assert runs == []
