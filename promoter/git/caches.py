"""Bounded caches of immutable git facts (trees, ancestry, logs), safe to drop at any time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from promoter.errors import GitError
from promoter.git.metadata import TREE_MODE, TreeEntries

K = TypeVar("K")
V = TypeVar("V")

TREE_ENTRIES = 200_000
"""Tree entries kept in the cache of parsed trees (about 50 MB)."""


def remember(cache: dict[K, V], key: K, value: V, limit: int = 1 << 16) -> V:
    """Store ``value``; a full cache starts over (it holds immutable facts, cheap to redo)."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


FACTS = 1024
"""Entries a generation of a mirror's ``Recent`` caches of commit facts holds at least
(and twice its refs when it has more: every tip's facts stay)."""


class Recent(Generic[K, V]):
    """A bounded cache that keeps what was used lately, for facts a daemon running for
    weeks meets without end (every change brings new commits, notes and trees).

    Entries go into a young generation; once it holds ``limit``, it becomes the old one
    and the previous old one is let go. A hit in the old generation moves the entry back
    to the young one, so an entry used at least once every ``limit`` puts stays, and the
    cache never holds more than twice ``limit``. Values are never None (None is a miss).
    Not thread-safe: its owner locks.
    """

    def __init__(self, limit: int = FACTS) -> None:
        self.limit = limit
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def __contains__(self, key: K) -> bool:
        return key in self._young or key in self._old

    def get(self, key: K) -> V | None:
        value = self._young.get(key)
        if value is None:
            value = self._old.pop(key, None)
            if value is not None:
                self._add(key, value)
        return value

    def put(self, key: K, value: V) -> V:
        """Store ``value`` (kept as the newest) and return it."""
        if key in self._young:
            self._young[key] = value
        else:
            self._old.pop(key, None)
            self._add(key, value)
        return value

    def clear(self) -> None:
        self._young.clear()
        self._old.clear()

    def _add(self, key: K, value: V) -> None:
        if len(self._young) >= self.limit:
            self._old, self._young = self._young, {}
        self._young[key] = value


def tree_entries(data: bytes) -> dict[str, tuple[int, str]]:
    """A raw tree object's entries (``<octal mode> <name>\\0<20-byte SHA>`` each): name ->
    (mode, SHA in hex). The promoter only reads the trees it looks notes up in, so names
    are not checked as a checkout checks them (GitPython's parser does: 3 % of a cold
    start's CPU). A truncated or malformed record is an error."""
    entries: dict[str, tuple[int, str]] = {}
    offset, end = 0, len(data)
    while offset < end:
        space = data.find(b" ", offset)
        zero = data.find(b"\0", space + 1) if space >= 0 else -1
        if zero < 0 or zero + 21 > end:
            raise ValueError("truncated tree entry")
        entries[data[space + 1 : zero].decode("utf-8", "surrogateescape")] = (
            int(data[offset:space], 8),
            data[zero + 1 : zero + 21].hex(),
        )
        offset = zero + 21
    return entries


class TreeCache:
    """Parsed trees by SHA, read through ``read_object``; bounded by entries, not trees.

    Every ledger write makes a new notes tree of thousands of entries, and thousands
    of those would hold hundreds of MB.
    """

    def __init__(self, read_object: Callable[[str], bytes | None]) -> None:
        self._read_object = read_object
        self._trees: dict[str, TreeEntries] = {}
        self._entries = 0
        self._roots: dict[str, str] = {}
        """The root tree each notes ref was last read at (``moved``)."""

    def __call__(self, tree: str) -> TreeEntries:
        """The entries of ``tree``; ``GitError`` when it cannot be read (a mirror deleted or
        damaged under the read): never taken for an empty tree, which a notes commit
        written on it would make a commit that forgets every other note."""
        cached = self._trees.get(tree)
        if cached is not None:
            return cached
        data = self._read_object(tree)
        if data is None:
            raise GitError(f"tree {tree} cannot be read")
        entries = tree_entries(data)
        self._entries += len(entries)
        if self._entries > TREE_ENTRIES or len(self._trees) >= 4096:
            self._trees.clear()
            self._entries = len(entries)
        self._trees[tree] = entries
        return entries

    def moved(self, ref: str, root: str) -> None:
        """The notes ref ``ref`` is read at the tree ``root`` now: the trees that only its
        earlier root held are let go. Every ledger write makes a new root and a new
        fan-out tree; kept until the bound, the superseded ones were most of what a burst
        of promotions left in memory (issue 33's storm). A tree let go by mistake (two refs
        sharing one) is only read again."""
        earlier = self._roots.get(ref)
        self._roots[ref] = root
        if earlier is not None and earlier != root and earlier in self._trees:
            self._let_go(earlier, self(root))

    def _let_go(self, tree: str, successor: TreeEntries | None) -> None:
        """Drop ``tree`` and, depth first, its cached subtrees ``successor`` (the tree that
        took its place, if any) does not hold as they are."""
        entries = self._trees.pop(tree, None)
        if entries is None:
            return
        self._entries -= len(entries)
        for name, (mode, sha) in entries.items():
            if mode != TREE_MODE:
                continue
            kept = successor.get(name) if successor is not None else None
            if kept is not None and kept[1] == sha:
                continue
            after = self._trees.get(kept[1]) if kept is not None and kept[0] == TREE_MODE else None
            self._let_go(sha, after)


NOTE_BYTES = 64 << 20
"""Bytes of note contents kept (hydrator metadata and ledger notes: a few hundred each)."""


class BlobCache:
    """Contents of small blobs (notes) by SHA, bounded by bytes; a full cache starts over."""

    def __init__(self, limit: int = NOTE_BYTES) -> None:
        self._limit = limit
        self._blobs: dict[str, bytes] = {}
        self._bytes = 0

    def __contains__(self, sha: str) -> bool:
        return sha in self._blobs

    def get(self, sha: str) -> bytes | None:
        return self._blobs.get(sha)

    def put(self, sha: str, data: bytes) -> None:
        if sha in self._blobs:
            return
        if self._bytes + len(data) > self._limit:
            self._blobs.clear()
            self._bytes = 0
        self._blobs[sha] = data
        self._bytes += len(data)
