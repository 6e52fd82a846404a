"""Commits in a mirror: their trees, parents, times, ancestry and logs, read once and kept,
and the commit and tree objects the promoter makes.

What a SHA names never changes, so it is kept by SHA: the commit facts (trees, commit
times, ancestry) in ``caches.Recent``, which keeps what was used lately (the tips of
every ref, and what the last thousands of reads asked), the logs and authors in a dict
that starts over when full. A daemon that promotes for weeks holds the facts of the
commits it works on, not of every commit it ever met.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from promoter.errors import GitError
from promoter.git.ancestry import walk_ancestry
from promoter.git.bare import BareRepository, Env
from promoter.git.caches import Recent, remember
from promoter.git.log_records import (
    AUTHORS_FORMAT,
    LOG_FORMAT,
    MAX_AUTHORS_LOG,
    parse_authors,
    parse_log,
)
from promoter.models import SHA_RE, Author, DryCommit

T = TypeVar("T")


def is_sha(value: str) -> bool:
    return bool(SHA_RE.match(value))


class CommitFacts(BareRepository):
    """A bare repository whose commit facts are kept (see the module)."""

    def __init__(
        self, *, name: str, url: str, root: Path, env: Env | None = None, timeout: float = 120.0
    ) -> None:
        super().__init__(name=name, url=url, root=root, env=env, timeout=timeout)
        self._tree_of: Recent[str, str] = Recent()
        self._ancestry: Recent[tuple[str, str], bool] = Recent()
        self._commit_time: Recent[str, datetime] = Recent()
        self._logs: dict[tuple[str | None, str, int], list[DryCommit]] = {}
        self._authors: dict[tuple[str | None, str, int], tuple[Author, ...]] = {}

    # -- objects the promoter makes -----------------------------------------------------

    def commit_tree(self, tree: str, parents: list[str], message: str) -> str:
        """A new commit object (no ref moves) with a fallback identity if none is set."""
        args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
        with self._lock:
            return self._run(args, commit=True)[1].strip()

    def merge_tree(self, ours: str, theirs: str) -> tuple[bool, str]:
        """A three-way merge of two commits, written as a tree only: ``(clean, tree)``.

        ``git merge-tree --write-tree``: no working tree, no ref moves; the tree of a
        conflicting merge holds conflict markers and is only good for telling it apart.
        """
        args = ["merge-tree", "--write-tree", "--no-messages", ours, theirs]
        with self._lock:
            status, out, _ = self._run(args, ok=(0, 1))
        return status == 0, out.split("\n", 1)[0].strip()

    # -- commits ------------------------------------------------------------------------

    def commit_parents(self, sha: str) -> tuple[str, list[str]] | None:
        """The tree and parents of commit ``sha``, or None when the mirror lacks it."""
        with self._lock:
            data = self._commit_data(sha)
        if data is None:
            return None
        tree, parents = "", []
        for line in data.split(b"\n\n", 1)[0].splitlines():
            if line.startswith(b"tree "):
                tree = line[5:].decode()
            elif line.startswith(b"parent "):
                parents.append(line[7:].decode())
        return (tree, parents) if tree else None

    def tree_history(self, tip: str, limit: int) -> list[tuple[str, str]]:
        """``(commit, tree)`` of the newest ``limit`` commits reachable from ``tip``."""
        args = ["log", "--format=%H %T", f"-n{limit}", "--end-of-options", tip, "--"]
        with self._lock:
            out = self._run(args)[1]
        return [(c, t) for c, _, t in (ln.partition(" ") for ln in out.splitlines()) if t]

    def resolve_commit(self, prefix: str) -> str | None:
        """The full SHA of the one commit ``prefix`` names; None if no commit or several do."""
        if not re.fullmatch(r"[0-9a-f]{4,40}", prefix):
            return None
        with self.lock:
            code, out, _ = self._run(
                ["rev-parse", "--verify", "--quiet", f"{prefix}^{{commit}}"], ok=(0, 1, 128)
            )
        return out.strip() if code == 0 and out.strip() else None

    def tree_sha(self, sha: str) -> str:
        """The tree of commit ``sha`` (or of a full ref name); ``GitError`` when unknown."""
        with self._lock:
            cached = self._tree_of.get(sha)
            if cached is not None:
                return cached
            header = self._header(f"{sha}^{{tree}}")
            if header is None:
                raise GitError(f"commit {sha} is not in mirror {self.name}")
            return self._tree_of.put(sha, header) if is_sha(sha) else header

    def commit_time(self, sha: str) -> datetime | None:
        """When ``sha`` was committed (its committer date), or None for an unknown commit."""
        with self._lock:
            cached = self._commit_time.get(sha)
            if cached is not None:
                return cached
            data = self._data(sha)
            found = None if data is None else _committed(data)
            if found is not None and is_sha(sha):
                self._commit_time.put(sha, found)
            return found

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is ``descendant`` or one of its ancestors; False if unknown."""
        key = (ancestor.lower(), descendant.lower())
        if not (is_sha(key[0]) and is_sha(key[1])):
            return False
        with self._lock:
            cached = self._ancestry.get(key)
            if cached is not None:
                return cached
            walked = walk_ancestry(self._parents, *key)
            if walked is not None:
                return self._ancestry.put(key, walked)
            status, _, _ = self._run(["merge-base", "--is-ancestor", *key], ok=(0, 1, 128))
            if status == 128:  # an unknown commit: may be known after the next fetch
                return False
            return self._ancestry.put(key, status == 0)

    def _parents(self, sha: str) -> list[str] | None:
        commit = self.commit_parents(sha)
        return None if commit is None else commit[1]

    # -- logs ---------------------------------------------------------------------------

    def log(self, since_exclusive: str | None, until: str, *, limit: int = 50) -> list[DryCommit]:
        """Commits reachable from ``until`` but not from ``since_exclusive``, newest first.

        Cached when both ends are SHAs: history below a commit never changes.
        """
        found = self._read_log(self._logs, LOG_FORMAT, since_exclusive, until, limit, parse_log)
        return list(found)

    def authors(self, since_exclusive: str | None, until: str) -> tuple[Author, ...]:
        """The authors and co-authors of the commits ``log`` would list, without its limit.

        ``GitError`` past ``MAX_AUTHORS_LOG`` commits. Cached when both ends are SHAs.
        """

        def parse(out: str) -> tuple[Author, ...]:
            if out.count("\x1e") > MAX_AUTHORS_LOG:
                raise GitError(f"more than {MAX_AUTHORS_LOG} commits to {until[:7]}")
            return parse_authors(out)

        limit = MAX_AUTHORS_LOG + 1
        return self._read_log(self._authors, AUTHORS_FORMAT, since_exclusive, until, limit, parse)

    def _read_log(
        self,
        cache: dict[tuple[str | None, str, int], T],
        form: str,
        since_exclusive: str | None,
        until: str,
        limit: int,
        parse: Callable[[str], T],
    ) -> T:
        """``git log --format=form`` of ``until`` but not ``since_exclusive``, parsed; kept
        in ``cache`` when both ends are SHAs."""
        key = (since_exclusive, until, limit)
        immutable = is_sha(until) and (since_exclusive is None or is_sha(since_exclusive))
        revs = [until] if since_exclusive is None else [until, f"^{since_exclusive}"]
        with self._lock:
            if immutable and key in cache:
                return cache[key]
            args = ["log", f"--format={form}", f"-n{limit}", "--end-of-options"]
            _, out, _ = self._run([*args, *revs, "--"])
            found = parse(out)
            if immutable:
                remember(cache, key, found, 1024)
        return found


def _committed(data: bytes) -> datetime | None:
    """The committer date of a commit object's content."""
    for line in data.split(b"\n\n", 1)[0].splitlines():
        if line.startswith(b"committer "):
            # committer NAME <EMAIL> SECONDS +ZONE
            return datetime.fromtimestamp(int(line.split(b" ")[-2]), tz=UTC)
    return None
