"""Lock files left behind by a git that was killed (a crash, SIGKILL, an OOM kill).

git takes a ref or index lock for milliseconds and removes it when done; a killed
git never does, and every later command on that ref fails with "Unable to create
'...lock': File exists" for ever. A lock older than ``STALE_AFTER`` cannot belong
to a live git, so it is removed and the command retried once.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path

STALE_AFTER = 30.0
"""Seconds after which a lock file is taken as abandoned."""

_LOCKED = re.compile(r"Unable to create '([^']+\.lock)': File exists")

log = logging.getLogger("promoter.git")


def _complained_of(stderr: str, now: float | None) -> tuple[Path, float | None] | None:
    """The lock git complained about in ``stderr`` and its age in seconds (None when it
    is gone); None when git complained of no lock."""
    match = _LOCKED.search(stderr)
    if match is None:
        return None
    path = Path(match.group(1))
    try:
        return path, (now if now is not None else time.time()) - path.stat().st_mtime
    except OSError:
        return path, None


def clear_stale_lock(stderr: str, *, now: float | None = None) -> bool:
    """Remove the abandoned lock git complained about in ``stderr``; whether one was."""
    found = _complained_of(stderr, now)
    if found is None:
        return False
    path, age = found
    if age is None or age < STALE_AFTER:
        return False
    try:
        path.unlink()
    except OSError:
        return False
    log.warning("removed an abandoned git lock", extra={"lock": str(path), "age_s": round(age)})
    return True


def abandoned_in(stderr: str, *, now: float | None = None) -> float | None:
    """Seconds until the lock git complained about in ``stderr`` is taken as abandoned
    (0 when it is already, or gone); None when git complained of no lock."""
    found = _complained_of(stderr, now)
    if found is None:
        return None
    age = found[1]
    return 0.0 if age is None else max(0.0, STALE_AFTER - age)


def clear_stale_locks(root: Path) -> int:
    """Remove every abandoned lock file under ``root`` (a repository this process owns)."""
    removed = 0
    cutoff = time.time() - STALE_AFTER
    for path in root.rglob("*.lock"):
        try:
            if path.is_file() and path.stat().st_mtime < cutoff:
                path.unlink()
                removed += 1
        except OSError:
            continue
    if removed:
        log.warning("removed abandoned git locks", extra={"path": str(root), "count": removed})
    return removed
