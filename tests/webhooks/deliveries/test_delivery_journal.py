"""The delivery log's journal on its own: a rotation that fails leaves it writable."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from webhooks.deliveries.journal import ADDED, Journal, encode, replay


def test_a_rotation_the_file_system_refuses_leaves_the_journal_appending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path / "deliveries.journal")
    journal.append(encode([(ADDED, 1.0, "first")]))

    def refused(src: object, dst: object) -> None:
        raise PermissionError("read-only file system")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", refused)
        with pytest.raises(PermissionError):
            journal.rotate()
    journal.append(encode([(ADDED, 2.0, "second")]))  # not "Bad file descriptor"
    journal.close()
    assert [entry[2] for entry in replay(tmp_path / "deliveries.journal")] == ["first", "second"]


def test_a_rotation_moves_what_was_written_aside_and_starts_an_empty_file(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "deliveries.journal")
    journal.append(encode([(ADDED, 1.0, "first")]))
    journal.rotate()
    journal.append(encode([(ADDED, 2.0, "second")]))
    journal.close()
    assert [e[2] for e in replay(journal.rotated)] == ["first"]
    assert [e[2] for e in replay(journal.path)] == ["second"]


def test_short_writes_are_carried_on_until_every_byte_is_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk or a signal may write part of a buffer: the rest follows, in order."""
    journal = Journal(tmp_path / "deliveries.journal")
    data = encode([(ADDED, 1700000000.0 + i, f"github:d-{i}") for i in range(20)])
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, chunk: real(fd, bytes(chunk)[:7]))
    journal.append(data)
    monkeypatch.undo()
    journal.close()
    assert (tmp_path / "deliveries.journal").read_bytes() == data


def test_a_line_garbled_from_its_first_byte_is_skipped_and_the_rest_replayed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries.journal"
    good = encode([(ADDED, 1.5, "github:a"), (ADDED, 2.5, "github:b")])
    first, second = good.splitlines(keepends=True)
    path.write_bytes(first + b"\xff\xfe1.0 github:x\n" + second)
    assert list(replay(path)) == [(ADDED, 1.5, "github:a"), (ADDED, 2.5, "github:b")]


def test_the_journal_is_readable_by_its_owner_only(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "deliveries.journal")
    try:
        journal.append(encode([(ADDED, 1.0, "github:a")]))
        assert stat.S_IMODE(os.stat(journal.path).st_mode) == 0o600
    finally:
        journal.close()


def test_a_rotated_file_a_crash_left_is_found_by_its_name_and_replayed_first(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deliveries.journal"
    (tmp_path / "deliveries.journal.1").write_bytes(encode([(ADDED, 1.0, "github:old")]))
    journal = Journal(path)
    try:
        journal.append(encode([(ADDED, 2.0, "github:new")]))
        entries = [entry for file in journal.files() for entry in replay(file)]
    finally:
        journal.close()
    assert entries == [(ADDED, 1.0, "github:old"), (ADDED, 2.0, "github:new")]
