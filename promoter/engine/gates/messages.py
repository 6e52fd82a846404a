"""Commit messages as data: trailers (``Key: value`` lines ending a message) and the record
the commit-message gate's expressions see."""

from __future__ import annotations

import re
from typing import Any

from promoter.models import DryCommit

_TRAILER = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*):\s*(.*)$")


def trailers(body: str) -> dict[str, str]:
    """The trailers of a message body: its last paragraph, when every line is ``Key: value``.

    Keys keep their spelling; a repeated key keeps its last value.
    """
    paragraphs = [p for p in re.split(r"\n\s*\n", body.strip()) if p.strip()]
    if not paragraphs:
        return {}
    found: dict[str, str] = {}
    for line in paragraphs[-1].splitlines():
        match = _TRAILER.match(line.strip())
        if match is None:
            return {}
        found[match.group(1)] = match.group(2).strip()
    return found


def has_trailer(found: dict[str, str], key: str) -> bool:
    """Whether ``key`` is among the trailers (case-insensitive), with a value not false."""
    value = next((v for k, v in found.items() if k.lower() == key.lower()), None)
    return value is not None and value.lower() not in ("false", "no", "0")


def record(commit: DryCommit) -> dict[str, Any]:
    """What a ``blockIf`` expression sees: subject, body, author and trailers."""
    return {
        "sha": commit.sha,
        "subject": commit.subject,
        "body": commit.body,
        "author": commit.author,
        "trailers": trailers(commit.body),
    }
