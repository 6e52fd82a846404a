"""docs/security.md's threat model names the tests that show each row: every one exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def threat_model() -> str:
    text = (ROOT / "docs/security.md").read_text()
    return text.split("## Threat model", 1)[1].split("\n## ", 1)[0]


def test_every_test_the_threat_model_names_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", threat_model())
    assert len(named) > 20
    missing = []
    for path, name in named:
        source = ROOT / path
        if not source.is_file():
            missing.append(path)
            continue
        functions = {
            node.name
            for node in ast.walk(ast.parse(source.read_text()))
            if isinstance(node, ast.FunctionDef)
        }
        if name and name not in functions:
            missing.append(f"{path}::{name}")
    assert missing == []


def test_every_row_names_who_what_why_and_a_test() -> None:
    rows = [line for line in threat_model().splitlines() if line.startswith("| ")][2:]
    assert len(rows) >= 9
    bare = [row for row in rows if len(row.split(" | ")) != 4 or "`tests/" not in row]
    assert bare == []
