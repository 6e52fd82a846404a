"""The hydrator metadata JSON (git note and ``hydrator.metadata`` file): parse, render, find.

Shared by the mirror, which reads it, and the demo hydrator, which writes it.
Notes trees are looked up here too, fan-out (``ab/cdef...``) included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from promoter.errors import MetadataMissing
from promoter.models import SHA_RE, HydratorMetadata

NOTES_REF = "refs/notes/hydrator.metadata"
"""The notes ref that maps a hydrated commit to its dry commit."""

METADATA_FILE = "hydrator.metadata"
"""The file at the root of a hydrated tree that names its dry commit."""

TREE_MODE = 0o040000
_TEXT_FIELDS = frozenset({"repoURL", "author", "date", "subject", "body"})


def parse_metadata(data: bytes | str, *, source: str, where: str) -> HydratorMetadata:
    """The metadata in ``data``; ``MetadataMissing`` when it is not JSON with a valid ``drySha``.

    ``source`` is "note" or "file"; ``where`` names the commit, for the message.
    """
    try:
        value: Any = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise MetadataMissing(f"the hydrator {source} of {where} is not valid JSON") from None
    if not isinstance(value, dict):
        raise MetadataMissing(f"the hydrator {source} of {where} is not a JSON object")
    dry_sha = value.get("drySha")
    if not isinstance(dry_sha, str) or not SHA_RE.match(dry_sha.lower()):
        raise MetadataMissing(f"the hydrator {source} of {where} has no valid drySha")
    fields = {k: v for k, v in value.items() if k in _TEXT_FIELDS and isinstance(v, str)}
    return HydratorMetadata.model_validate({**fields, "drySha": dry_sha.lower(), "source": source})


def read_metadata(
    sha: str, *, note: bytes | None, file: Callable[[], bytes | None]
) -> HydratorMetadata | MetadataMissing:
    """The metadata of hydrated commit ``sha`` from its note, else from ``file()``.

    ``file`` is only called when the note is absent or invalid. Returns, rather than
    raises, ``MetadataMissing`` so that callers can cache the outcome.
    """
    problems: list[str] = []
    for source in ("note", "file"):
        data = note if source == "note" else file()
        if data is not None:
            try:
                return parse_metadata(data, source=source, where=sha)
            except MetadataMissing as exc:
                problems.append(str(exc))
    if not problems:
        problems.append(f"commit {sha} has no hydrator note and no {METADATA_FILE} file")
    return MetadataMissing("; ".join(problems))


def render_metadata(
    *,
    dry_sha: str,
    repo_url: str = "",
    author: str = "",
    date: str = "",
    subject: str = "",
    body: str = "",
) -> str:
    """The JSON text the hydrator writes (file and note), with Argo CD's field names."""
    document = {
        "drySha": dry_sha,
        "repoURL": repo_url,
        "author": author,
        "date": date,
        "subject": subject,
        "body": body,
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


TreeEntries = Mapping[str, tuple[int, str]]
"""A tree as ``name -> (mode, object sha)``."""


def find_note(notes_tree: str, target: str, read_tree: Callable[[str], TreeEntries]) -> str | None:
    """The blob SHA of the note on ``target`` in the notes tree ``notes_tree``, or None.

    Handles every fan-out git writes: ``<sha>``, ``ab/<rest>``, ``ab/cd/<rest>``, ...
    """
    tree, rest = notes_tree, target.lower()
    while rest:
        entries = read_tree(tree)
        entry = entries.get(rest)
        if entry is not None and entry[0] != TREE_MODE:
            return entry[1]
        sub = entries.get(rest[:2])
        if sub is None or sub[0] != TREE_MODE or len(rest) <= 2:
            return None
        tree, rest = sub[1], rest[2:]
    return None
