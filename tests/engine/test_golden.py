"""Every golden case gives the decision its file expects (``tests/engine/golden/``).

A rule change shows as a diff of these files: run with ``PROMOTER_UPDATE_GOLDEN=1`` to
write the decisions the engine gives now into them, then read the diff before committing.
The format is described in ``tests/engine/golden.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from promoter.engine import decide

from .golden import render, snapshot_of

CASES = Path(__file__).with_name("golden")
UPDATE = os.environ.get("PROMOTER_UPDATE_GOLDEN") == "1"


def _cases() -> list[Path]:
    return sorted(CASES.glob("*.yaml"))


def _dump(case: dict[str, Any]) -> str:
    return yaml.safe_dump(case, sort_keys=False, width=100, allow_unicode=True)


@pytest.mark.parametrize("path", _cases(), ids=lambda p: p.stem)
def test_the_engine_decides_each_golden_case_as_its_file_says(path: Path) -> None:
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    snapshot = snapshot_of(case)
    got = render(snapshot, decide(snapshot))
    if UPDATE:
        case["expect"] = got
        path.write_text(_dump(case), encoding="utf-8")
    assert got == case.get("expect"), f"{path.name}: the engine's decision changed"


def test_the_golden_cases_cover_every_promotion_rule_of_the_design() -> None:
    """DESIGN.md §3 names rules 1 to 8; each has at least one case."""
    rules = {yaml.safe_load(p.read_text(encoding="utf-8"))["rule"] for p in _cases()}
    assert set(range(1, 9)) <= rules


def test_a_changed_decision_fails_its_case(tmp_path: Path) -> None:
    """The comparison bites: the same case with one verdict edited no longer matches."""
    path = CASES / "rule3-proposed-gate-pending.yaml"
    case = yaml.safe_load(path.read_text(encoding="utf-8"))
    snapshot = snapshot_of(case)
    got = render(snapshot, decide(snapshot))
    edited = dict(case["expect"])
    edited["environments"] = [
        {**edited["environments"][0], "verdict": "dev promoting: merging"},
        *edited["environments"][1:],
    ]
    assert got == case["expect"]
    assert got != edited
