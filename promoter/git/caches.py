"""Bounded caches of immutable git facts (trees, ancestry, logs), safe to drop at any time."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from git.objects.fun import tree_entries_from_data

from promoter.git.metadata import TreeEntries

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


class TreeCache:
    """Parsed trees by SHA, read through ``read_object``; bounded by entries, not trees.

    Every ledger write makes a new notes tree of thousands of entries, and thousands
    of those would hold hundreds of MB.
    """

    def __init__(self, read_object: Callable[[str], bytes | None]) -> None:
        self._read_object = read_object
        self._trees: dict[str, TreeEntries] = {}
        self._entries = 0

    def __call__(self, tree: str) -> TreeEntries:
        cached = self._trees.get(tree)
        if cached is not None:
            return cached
        data = self._read_object(tree) or b""
        entries = {name: (mode, sha.hex()) for sha, mode, name in tree_entries_from_data(data)}
        self._entries += len(entries)
        if self._entries > TREE_ENTRIES or len(self._trees) >= 4096:
            self._trees.clear()
            self._entries = len(entries)
        self._trees[tree] = entries
        return entries


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
