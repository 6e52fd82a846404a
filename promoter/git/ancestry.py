"""Whether one commit is an ancestor of another, answered near the tip without a process.

``git merge-base --is-ancestor`` costs a process (a few milliseconds) per question. Most
questions a reconcile asks are about commits a step or two apart (a proposed commit on
top of the running one), so the mirror first walks the descendant's parents through its
persistent ``cat-file``: a few objects read, microseconds each. The walk only answers
when it is sure (the ancestor found, or the whole history read without it); otherwise
git is asked as before.
"""

from __future__ import annotations

from collections.abc import Callable

WALK = 16
"""Commits read at most before leaving the question to ``git merge-base``."""

Parents = Callable[[str], list[str] | None]
"""The parents of a commit, or None when the object is not a commit the repository has."""


def walk_ancestry(
    parents: Parents, ancestor: str, descendant: str, limit: int = WALK
) -> bool | None:
    """True: ``ancestor`` is ``descendant`` or reachable from it; False: every commit
    reachable from ``descendant`` was read and none is ``ancestor``; None: not known
    within ``limit`` commits, or an object is missing or not a commit (ask git)."""
    frontier = [descendant]
    seen: set[str] = set()
    while frontier:
        sha = frontier.pop()
        if sha == ancestor:
            return True
        if sha in seen:
            continue
        if len(seen) >= limit:
            return None
        seen.add(sha)
        found = parents(sha)
        if found is None:
            return None
        frontier.extend(found)
    return False
