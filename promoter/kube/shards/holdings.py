"""The shards one replica holds, as its Lease rounds change them, behind one lock.

A round acts on its shards on up to ``WRITERS`` threads at once (``coordinator``), and
other threads read what is held (the controller, ``/readyz``, the metrics). So every
set, map and count here changes under the one lock, and each change that reads before
it writes (was the shard held, ever held, already revoked; one more transition) reads
and writes under it: no update is lost, and the counts agree with the sets.
"""

from __future__ import annotations

import threading
from collections import Counter


class Holdings:
    """What this process holds, has held, and is handing over."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: set[str] = set()
        self._ever: set[str] = set()
        """The shards this process has held: renewing one of them after its hold lapsed,
        nobody else having written its Lease since, is a regain, not a take-over."""
        self._regained: set[str] = set()
        """Held again this round after a lapse (``begin_round`` clears it)."""
        self._revoked_at: dict[str, float] = {}
        """Shards being handed over, and since when."""
        self._transitions: Counter[str] = Counter()

    def held(self) -> set[str]:
        with self._lock:
            return set(self._held)

    def holds(self, shard: str) -> bool:
        with self._lock:
            return shard in self._held

    def transitions(self) -> Counter[str]:
        """Shards acquired, released (handed over), lost (taken by another replica) and
        lapsed (not renewed within the renew deadline), so far."""
        with self._lock:
            return Counter(self._transitions)

    def count(self, kind: str) -> None:
        with self._lock:
            self._transitions[kind] += 1

    # --- a round -------------------------------------------------------------------------

    def lapse(self, valid: set[str]) -> set[str]:
        """Drop the shards held that are not ``valid`` any more (their hold lapsed before
        they were renewed), each counted; which they were."""
        with self._lock:
            lapsed = self._held - valid
            self._held -= lapsed
            self._transitions["lapsed"] += len(lapsed)
            return lapsed

    def begin_round(self) -> set[str]:
        """A round starts: what is held before it."""
        with self._lock:
            self._regained = set()
            return set(self._held)

    def end_round(self, before: set[str]) -> tuple[set[str], set[str], set[str]]:
        """The shards gained, lost and regained since ``before`` (``begin_round``'s)."""
        with self._lock:
            gained = self._held - before - self._regained
            return gained, before - self._held, set(self._regained)

    # --- one shard -------------------------------------------------------------------------

    def acquire(self, shard: str) -> bool:
        """Held from now, taken from nobody (free, or its holder gone); True, and counted
        as acquired, when it was not held."""
        with self._lock:
            new = shard not in self._held
            self._held.add(shard)
            self._ever.add(shard)
            if new:
                self._transitions["acquired"] += 1
            return new

    def renew(self, shard: str, *, was_held: bool) -> None:
        """Our Lease on ``shard`` written again; one not held before it (``was_held``)
        that this process held once is regained."""
        with self._lock:
            if not was_held and shard in self._ever:
                self._regained.add(shard)
            self._held.add(shard)
            self._ever.add(shard)

    def lose(self, shard: str, *, taken: bool) -> bool:
        """Not ours any more (``taken`` by another replica, else released); True when it
        was held (a shard taken is then counted as lost)."""
        with self._lock:
            self._revoked_at.pop(shard, None)
            if shard not in self._held:
                return False
            self._held.discard(shard)
            if taken:
                self._transitions["lost"] += 1
            return True

    def revoke(self, shard: str, now: float) -> tuple[bool, float]:
        """Its hand-over goes on: whether it begins now, and since when it goes on."""
        with self._lock:
            first = shard not in self._revoked_at
            return first, self._revoked_at.setdefault(shard, now)

    def keep(self, shard: str) -> None:
        """Ours to keep after all (assigned to us again): its hand-over is off."""
        with self._lock:
            self._revoked_at.pop(shard, None)
