"""Reads that raced a push webhook, told apart from the reads a call budget counts.

A hydrator pushes several branches at once and the SCM sends one push webhook per
branch: the first one's reconcile fetches every ref and may read another branch's new
tip before that branch's webhook announces it. That read is right (the daemon cannot
know yet that the commit is new), and so is one begun before the announcement and
answered after it (a slow SCM, a loaded machine); a commit read after its announcement
is what the webhook-driven budgets forbid.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from promoter.daemon import SnapshotReader


class Announcements:
    """For each commit a push webhook announced, how many calls the fake SCM had answered
    once the webhook was in; and the calls of the reads the daemon began before then.

    A read begun before the webhook (its status cache had no entry yet) may reach the
    fake only after the webhook is in: its calls count as early too (``watch_reads``).
    """

    def __init__(self, answered: Callable[[], int]) -> None:
        self._answered = answered
        self._at: dict[str, int] = {}
        self._begun_early: dict[str, list[tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def heard(self, sha: str) -> None:
        """A push webhook announcing ``sha`` has been delivered."""
        with self._lock:
            self._at.setdefault(sha, self._answered())

    @contextmanager
    def reading(self, sha: str) -> Iterator[None]:
        """The daemon reads ``sha``'s statuses within the block: when the block begins
        before the commit's announcement, the calls answered meanwhile are early."""
        with self._lock:
            announced = sha in self._at
            first = self._answered()
        try:
            yield
        finally:
            if not announced:
                with self._lock:
                    span = (first, self._answered())
                    self._begun_early.setdefault(sha, []).append(span)

    def watch_reads(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Tell ``reading`` of every status read the daemon's snapshots make."""
        original = SnapshotReader.statuses

        def statuses(reader: SnapshotReader, repo: Any, sha: str, **options: Any) -> Any:
            with self.reading(sha):
                return original(reader, repo, sha, **options)

        monkeypatch.setattr(SnapshotReader, "statuses", statuses)

    def early(self, reads: Iterable[tuple[int, str]]) -> dict[int, str]:
        """``call index -> SHA`` of the ``(call index, SHA read)`` pairs read before (or
        while) the push webhook announcing that SHA came in."""
        with self._lock:
            return {
                i: sha
                for i, sha in reads
                if i < self._at.get(sha, 0)
                or any(a <= i < b for a, b in self._begun_early.get(sha, ()))
            }
