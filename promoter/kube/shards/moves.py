"""The shards that moved since the controller last looked, from the Lease loop to it.

The Lease loop tells what a round moved (``changed``) and each hand-over as it begins
(``revoked``), on its own threads; the controller's thread takes them (``take``,
``take_revoked``) and acts on them. The sets are behind one lock, and each is taken
whole: a move told while the controller acts waits for its next step, none is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Moved:
    """Shards gained, regained (held again after a lapse, by nobody else meanwhile) and
    lost since the last look; ``any``: whether anything moved at all."""

    gained: set[str]
    regained: set[str]
    lost: set[str]
    any: bool


class Moves:
    """``moved()`` wakes whoever takes them (the controller)."""

    def __init__(self, moved: Callable[[], None]) -> None:
        self._moved = moved
        self._lock = threading.Lock()
        self._gained: set[str] = set()
        self._lost: set[str] = set()
        self._revoked: set[str] = set()
        self._regained: set[str] = set()
        self._changed = False

    def changed(self, gained: set[str], lost: set[str], regained: set[str]) -> None:
        """A round moved shards (``ShardCoordinator``'s ``on_change``)."""
        with self._lock:
            self._gained |= gained
            self._gained -= lost
            self._lost |= lost
            self._lost -= gained
            self._regained |= regained
            self._changed = True
        self._moved()

    def revoked(self, shard: str) -> None:
        """A hand-over of ``shard`` began (``ShardCoordinator``'s ``on_revoke``)."""
        with self._lock:
            self._revoked.add(shard)
        self._moved()

    def take(self) -> Moved:
        """What moved since the last call."""
        with self._lock:
            gained, regained, changed = self._gained, self._regained, self._changed
            lost, self._lost = self._lost, set()
            self._gained, self._regained, self._changed = set(), set(), False
        return Moved(gained=gained, regained=regained - gained, lost=lost, any=changed)

    def take_revoked(self) -> set[str]:
        """The shards whose hand-over began since the last call."""
        with self._lock:
            revoked, self._revoked = self._revoked, set()
        return revoked
