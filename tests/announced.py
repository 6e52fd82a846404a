"""Reads that raced a push webhook, told apart from the reads a call budget counts.

A hydrator pushes several branches at once and the SCM sends one push webhook per
branch: the first one's reconcile fetches every ref and may read another branch's new
tip before that branch's webhook announces it. That read is right (the daemon cannot
know yet that the commit is new); a commit read after its announcement is what the
webhook-driven budgets forbid.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


class Announcements:
    """For each commit a push webhook announced, how many calls the fake SCM had answered
    once the webhook was in."""

    def __init__(self, answered: Callable[[], int]) -> None:
        self._answered = answered
        self._at: dict[str, int] = {}

    def heard(self, sha: str) -> None:
        """A push webhook announcing ``sha`` has been delivered."""
        self._at.setdefault(sha, self._answered())

    def early(self, reads: Iterable[tuple[int, str]]) -> dict[int, str]:
        """``call index -> SHA`` of the ``(call index, SHA read)`` pairs read before (or
        while) the push webhook announcing that SHA came in."""
        return {i: sha for i, sha in reads if i < self._at.get(sha, 0)}
