"""Genuine GitHub REST bodies (``tests/fixtures/github/rest``) for the fake and the tests.

``openapi(name)`` is one of GitHub's OpenAPI examples, ``docs(name)`` an example of the
REST documentation newer than that copy; ``replay(name)`` the exchanges
of a PyGithub recording (status, lower-case headers, parsed body); ``quoted(name)`` a
body as people quoted GitHub's answer. Both are fresh
copies on every call, so callers may change them.
"""

from __future__ import annotations

import ast
import copy
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Exchange:
    """One recorded HTTP exchange."""

    method: str
    path: str
    status: int
    headers: dict[str, str]
    body: Any


class Genuine:
    def __init__(self, genuine_fixtures: Path) -> None:
        self.root = genuine_fixtures / "github" / "rest"

    def openapi(self, name: str) -> Any:
        """``openapi/<name>.json``, e.g. ``pulls.merge.409``."""
        return copy.deepcopy(_load(self.root / "openapi" / f"{name}.json"))

    def replay(self, name: str) -> list[Exchange]:
        """The exchanges of ``pygithub-replaydata/<name>.txt``."""
        return copy.deepcopy(_replay(self.root / "pygithub-replaydata" / f"{name}.txt"))

    def docs(self, name: str) -> Any:
        """``docs/<name>.json``: an example response of GitHub's REST documentation."""
        return copy.deepcopy(_load(self.root / "docs" / f"{name}.json"))

    def quoted(self, name: str) -> Any:
        """``quoted/<name>.json``: a body as people quoted GitHub's answer."""
        return copy.deepcopy(_load(self.root / "quoted" / f"{name}.json"))

    def error(self, name: str, index: int = -1) -> tuple[int, dict[str, str], Any]:
        """Status, headers and body of one recorded exchange (the last one by default)."""
        exchange = self.replay(name)[index]
        return exchange.status, exchange.headers, exchange.body


@cache
def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _replay(path: Path) -> list[Exchange]:
    lines = path.read_text(encoding="utf-8").split("\n")
    exchanges = []
    i = 0
    while i + 9 < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        method, path_, status = lines[i + 1], lines[i + 4], int(lines[i + 7])
        headers = {str(k).lower(): str(v) for k, v in ast.literal_eval(lines[i + 8])}
        raw = lines[i + 9]
        body = json.loads(raw) if raw.strip() else None
        exchanges.append(Exchange(method, path_, status, headers, body))
        i += 10
    return exchanges
