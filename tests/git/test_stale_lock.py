"""Abandoned git lock files are removed; a lock a live git may hold is left alone."""

from __future__ import annotations

import os
import time
from pathlib import Path

from promoter.git.process.stale_lock import (
    STALE_AFTER,
    abandoned_in,
    clear_stale_lock,
    clear_stale_locks,
)


def lock_file(path: Path, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_an_old_lock_named_in_gits_complaint_is_removed(tmp_path: Path) -> None:
    lock = lock_file(tmp_path / "refs/heads/env.lock", STALE_AFTER + 60)
    stderr = f"fatal: Unable to create '{lock}': File exists.\nAnother git process seems..."
    assert clear_stale_lock(stderr)
    assert not lock.exists()


def test_a_fresh_lock_is_left_for_the_git_that_holds_it(tmp_path: Path) -> None:
    lock = lock_file(tmp_path / "refs/heads/env.lock", 1)
    assert not clear_stale_lock(f"fatal: Unable to create '{lock}': File exists.")
    assert lock.exists()
    assert not clear_stale_lock("fatal: some other failure")


def test_a_repository_this_process_owns_is_swept_of_old_locks_only(tmp_path: Path) -> None:
    old = lock_file(tmp_path / "refs/notes/promoter.ledger.lock", STALE_AFTER + 1)
    new = lock_file(tmp_path / "index.lock", 0)
    assert clear_stale_locks(tmp_path) == 1
    assert not old.exists() and new.exists()


def test_how_long_until_a_lock_is_taken_as_abandoned(tmp_path: Path) -> None:
    lock = lock_file(tmp_path / "refs/heads/env.lock", 10)
    waited = abandoned_in(f"fatal: Unable to create '{lock}': File exists.")
    assert waited is not None and STALE_AFTER - 11 < waited <= STALE_AFTER - 10
    old = lock_file(tmp_path / "refs/heads/old.lock", STALE_AFTER + 5)
    assert abandoned_in(f"fatal: Unable to create '{old}': File exists.") == 0.0
    gone = tmp_path / "refs/heads/gone.lock"
    assert abandoned_in(f"fatal: Unable to create '{gone}': File exists.") == 0.0
    assert abandoned_in("fatal: some other failure") is None
