"""The fake GitHub's shared pieces: a repository's state, the answer type, refusals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

Answer = tuple[int, dict[str, str], Any]
Handler = Callable[..., Answer]


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class FakeRepo:
    full_name: str
    git_dir: Path
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


class Refused(Exception):
    """Raised by a handler to answer with an error (caught by the dispatcher)."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.answer: Answer = (status, {}, body)


NOT_FOUND = {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}
