"""The process-wide tuning the daemon sets as it starts: the garbage collector collects its
youngest generation less often than CPython's default and considers a full collection ten
times less often; the process environment is watched, so that a change of ``os.environ``,
and only a change, is seen, and never before ``os.environ`` shows it."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


def in_a_fresh_process(script: str) -> Any:
    """What ``script`` prints as JSON, run in a process of its own: an audit hook, once
    added, stays for the life of the process."""
    prelude = "import json, os, sys\nfrom promoter import tuning\n"
    done = subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)


def test_without_the_watch_no_version_is_given() -> None:
    assert in_a_fresh_process("print(json.dumps(tuning.environment_version()))") is None


def test_every_write_to_os_environ_changes_the_version_and_a_read_does_not() -> None:
    versions = in_a_fresh_process(
        """
        tuning.tune()
        tuning.tune()  # a second call adds no second hook
        seen = [tuning.environment_version()]
        os.environ.get("HOME"), dict(os.environ)
        seen.append(tuning.environment_version())
        os.environ["PROMOTER_PROBE"] = "1"
        seen.append(tuning.environment_version())
        os.environ.update(PROMOTER_PROBE="2", PROMOTER_OTHER="3")
        seen.append(tuning.environment_version())
        del os.environ["PROMOTER_PROBE"]
        seen.append(tuning.environment_version())
        os.environ.pop("PROMOTER_OTHER")
        seen.append(tuning.environment_version())
        print(json.dumps(seen))
        """
    )
    assert versions == [0, 0, 1, 3, 4, 5]


def test_a_change_heard_before_os_environ_shows_it_gives_no_version_until_it_does() -> None:
    """``os.environ`` raises the audit event, then changes the mapping: between the two, a
    reader must not take the mapping of before for the one after."""
    versions = in_a_fresh_process(
        """
        tuning.watch_environment()
        sys.audit("os.putenv", b"PROMOTER_PROBE", b"1")
        seen = [tuning.environment_version()]
        os.environ["PROMOTER_PROBE"] = "1"
        seen.append(tuning.environment_version())
        sys.audit("os.unsetenv", b"PROMOTER_PROBE")
        seen.append(tuning.environment_version())
        del os.environ["PROMOTER_PROBE"]
        seen.append(tuning.environment_version())
        print(json.dumps(seen))
        """
    )
    assert versions == [None, 2, None, 4]


def test_a_variable_set_past_os_environ_gives_no_version_from_then_on() -> None:
    versions = in_a_fresh_process(
        """
        tuning.watch_environment()
        os.putenv("PROMOTER_PROBE", "1")
        print(json.dumps([tuning.environment_version(), tuning.environment_version()]))
        """
    )
    assert versions == [None, None]
