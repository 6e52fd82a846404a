"""Git notes without a working tree: where a note lives, and one fast-import for many notes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from promoter.git.metadata import TREE_MODE, TreeEntries

COMMIT_MARK = ":1"
"""The mark of the notes commit in the stream (the blobs have none)."""


def notes_ref(ref: str) -> str:
    """``x`` -> ``refs/notes/x``; a full ref name unchanged."""
    return ref if ref.startswith("refs/") else f"refs/notes/{ref}"


def _data(command: bytes, data: bytes) -> bytes:
    """A fast-import command line followed by its exact-length ``data``."""
    return command + b"\ndata %d\n" % len(data) + data + b"\n"


def note_path(root: str | None, target: str, read_tree: Callable[[str], TreeEntries]) -> str:
    """Where the note on ``target`` lives in the notes tree ``root``, or should go.

    An existing note keeps its path; a new one goes under the fan-out directories the
    tree already has for its prefix, else flat at that level (git reads both).
    """
    tree, rest, prefix = root, target, ""
    while tree is not None and len(rest) > 2:
        entries = read_tree(tree)
        if rest in entries and entries[rest][0] != TREE_MODE:
            break
        sub = entries.get(rest[:2])
        if sub is None or sub[0] != TREE_MODE:
            break
        tree, prefix, rest = sub[1], f"{prefix}{rest[:2]}/", rest[2:]
    return f"{prefix}{rest}"


def fast_import_stream(
    *,
    ref: str,
    committer: str,
    when: int,
    tip: str | None,
    root: str | None,
    notes: Mapping[str, str],
    message: str,
    blobs: Iterable[bytes],
    read_tree: Callable[[str], TreeEntries],
) -> bytes:
    """The ``git fast-import`` input that commits ``notes`` on ``ref`` on top of ``tip``
    and prints the new commit's SHA (``get-mark``: on standard output, one line)."""
    parts = [_data(b"blob", data) for data in blobs]
    head = f"commit {ref}\nmark {COMMIT_MARK}\ncommitter {committer} {when} +0000"
    parts.append(_data(head.encode(), message.encode()))
    if tip:
        parts.append(f"from {tip}\n".encode())
    for target, text in sorted(notes.items()):
        path = note_path(root, target.lower(), read_tree)
        parts.append(_data(f"M 100644 inline {path}".encode(), text.encode()))
    parts.append(f"\nget-mark {COMMIT_MARK}\ndone\n".encode())
    return b"".join(parts)
