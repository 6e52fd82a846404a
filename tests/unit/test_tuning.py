"""The process-wide tuning the daemon sets as it starts: the garbage collector collects its
youngest generation less often than CPython's default and considers a full collection ten
times less often; and it adds no audit hook."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter import tuning

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.usefixtures("thresholds")
def test_cpythons_defaults_become_the_daemons() -> None:
    gc.set_threshold(700, 10, 10)
    tuning.tune_collector()
    assert gc.get_threshold() == (tuning.YOUNG, 10, tuning.FULL_EVERY) == (10_000, 10, 100)


@pytest.mark.usefixtures("thresholds")
def test_a_higher_young_threshold_and_the_middle_one_the_process_set_are_kept() -> None:
    gc.set_threshold(50_000, 20, 10)
    tuning.tune_collector()
    assert gc.get_threshold() == (50_000, 20, 100)


@pytest.mark.usefixtures("thresholds")
def test_a_reconciles_worth_of_short_lived_cycles_triggers_no_collection() -> None:
    """What a reconcile makes and drops (here 4,000 lists that hold themselves) no
    longer runs the collector in the middle of it (at CPython's 700: five times)."""
    tuning.tune_collector()
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


def test_the_daemon_s_tuning_adds_no_audit_hook_and_threads_start_under_a_trace_hook() -> None:
    """An audit hook runs Python code inside every ``sys.settrace``; under a trace hook
    for new threads (coverage, a debugger) CPython 3.11 then refused a starting thread's
    own ``sys.settrace`` now and then, and the thread died before it ran."""
    script = """
        import sys, threading
        from promoter import tuning
        hooks = []
        sys.addaudithook = hooks.append
        tuning.tune()
        threading.settrace(lambda *args: None)
        ran = []
        threads = [threading.Thread(target=ran.append, args=(n,)) for n in range(200)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(len(hooks), len(ran))
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["0", "200"]
    assert "Cannot install a trace function" not in done.stderr
