"""The delivery log's journal: an append-only file of the ids not yet in SQLite.

What a crash would otherwise lose: ids recorded (``+``) or forgotten (``-``) since the
last batch went into SQLite. An append is one ``write`` of whole lines, without fsync:
it survives the crash of the process (the kernel has the bytes), not a power loss.
The writer thread ``rotate``s the journal when it takes a batch, and ``drop``s the
rotated file once that batch is committed; at start-up, what the files still hold is
``replay``ed into SQLite first, oldest file first.

Concurrency: ``append`` and ``rotate`` are serialised by a lock; a line is written by
one ``write`` call on a file opened for appending, so a crash cuts at most the last
line, which ``replay`` skips.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

ADDED, FORGOTTEN = "+", "-"


def encode(entries: Iterable[tuple[str, float, str]]) -> bytes:
    """``op``, time received, id per line; the id escaped, so that it holds no newline."""
    return b"".join(
        b"%s%r %s\n" % (op.encode("ascii"), at, delivery_id.encode("unicode_escape"))
        for op, at, delivery_id in entries
    )


def replay(path: Path) -> Iterator[tuple[str, float, str]]:
    """The entries of a journal file, in order; an unfinished or garbled line is skipped."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    for line in data.split(b"\n")[:-1]:  # the last piece has no newline: cut by a crash
        at, _, escaped = line[1:].partition(b" ")
        op = line[:1].decode("ascii", errors="replace")
        try:
            yield op, float(at), escaped.decode("unicode_escape")
        except (ValueError, UnicodeDecodeError):
            continue


class Journal:
    """``<path>``, the file appended to, and ``<path>.1``, rotated and not yet committed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rotated = path.with_name(path.name + ".1")
        self._lock = threading.Lock()
        self._fd = self._open()

    def _open(self) -> int:
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def files(self) -> list[Path]:
        """The files that may hold entries, oldest first."""
        return [self.rotated, self.path]

    def append(self, data: bytes) -> None:
        """Write ``data`` (whole lines) in one call; ``OSError`` when it cannot."""
        with self._lock:
            written = os.write(self._fd, data)
            while written < len(data):  # a short write (a full disk, a signal)
                written += os.write(self._fd, data[written:])

    def rotate(self) -> None:
        """Start a new file; the current one becomes the rotated one (which must be dropped)."""
        with self._lock:
            os.close(self._fd)
            try:
                os.replace(self.path, self.rotated)
            finally:  # refused (a read-only or vanished directory): go on appending to it
                self._fd = self._open()

    def drop(self) -> None:
        """Delete the rotated file: its entries are in SQLite now."""
        self.rotated.unlink(missing_ok=True)

    def clear(self) -> None:
        """Empty both files (after a replay was committed)."""
        with self._lock:
            os.ftruncate(self._fd, 0)
        self.drop()

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)
