"""The suite runs from a plain clone: genuine payloads are read from ``tests/fixtures`` only,
and each of them sits under a README that gives its provenance and licence."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fixture_paths import FIXTURES

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"""shared['"]?\s*[/)]\s*['"]?fixtures|\.\./shared|parents\[\d\]\.parent""")
"""A path to the fixtures beside the repository (``../shared/fixtures``) rather than in it."""


def _sources() -> list[Path]:
    return [
        path
        for folder in ("tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path.resolve() != Path(__file__).resolve()
    ]


def test_no_test_or_benchmark_reads_fixtures_from_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _sources()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_every_fixture_file_sits_under_a_readme_giving_its_provenance() -> None:
    files = [p for p in FIXTURES.rglob("*") if p.is_file() and p.name != "README.md"]
    assert files
    orphans = [
        str(path.relative_to(FIXTURES))
        for path in files
        if not any(
            (parent / "README.md").is_file()
            for parent in path.parents
            if parent != FIXTURES and FIXTURES in parent.parents
        )
    ]
    assert orphans == []


def test_the_payloads_the_helpers_name_are_in_the_repository() -> None:
    from tests.webhooks.helpers import GITHUB_FIXTURES, GITLAB_FIXTURES

    for folder in (GITHUB_FIXTURES, GITLAB_FIXTURES, FIXTURES / "github" / "rest" / "openapi"):
        assert ROOT in folder.parents
        assert any(folder.rglob("*.json")), folder
