"""The local SCM keeps the refs of its repositories packed, as a git server does.

A push writes each branch it moves as a loose ref, one file; a repository whose thousands
of environment branches were pushed that way makes every ref advertisement (a mirror's
clone, a ledger's push) open and read every file. ``git pack-refs`` moves them into one
``packed-refs`` file, as ``git gc`` would; the local SCM does it when it first reads a
repository holding ``LOOSE_REFS`` loose refs or more. Only in a repository owned by the
daemon's own user: a ``packed-refs`` written into another user's repository would be
the daemon's file there. Best effort: a failure (a lock held by a push) is logged and
changes nothing (the next process start tries again).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from promoter.errors import GitError
from promoter.git.process.runner import run_git

log = logging.getLogger("promoter.scm.local")

LOOSE_REFS = 256
"""Loose refs under ``refs/`` from which a repository's refs are packed."""


def loose_refs(path: Path, *, at_least: int) -> int:
    """The loose refs under ``path``'s ``refs/``, counted up to ``at_least``."""
    found = 0
    for _, _, files in os.walk(path / "refs"):
        found += len(files)
        if found >= at_least:
            break
    return found


def pack_refs(path: Path, env: Mapping[str, str]) -> bool:
    """Pack the loose refs of the repository at ``path`` if it has many and is the
    daemon's user's; whether it did."""
    try:
        if path.stat().st_uid != os.geteuid():
            return False
    except OSError:
        return False
    count = loose_refs(path, at_least=LOOSE_REFS)
    if count < LOOSE_REFS:
        return False
    try:
        run_git(["pack-refs", "--all"], cwd=path, base_env=dict(env))
    except GitError as exc:
        log.info("refs not packed", extra={"repository": str(path), "reason": str(exc)})
        return False
    log.info("refs packed", extra={"repository": str(path), "loose": f"{count}+"})
    return True
