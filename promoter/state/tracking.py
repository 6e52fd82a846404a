"""Which strategy tracks which hydrated SHA, so a status event finds its strategy at once.

The reconciler replaces a strategy's SHAs after every read; webhooks look SHAs up.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class ShaIndex:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_strategy: dict[str, frozenset[str]] = {}
        self._by_sha: dict[str, frozenset[str]] = {}
        """Owners by SHA; most SHAs have one, and those share their strategy's one set
        (``_alone``) rather than hold a set each."""
        self._alone: dict[str, frozenset[str]] = {}

    def track(self, strategy: str, shas: Iterable[str]) -> set[str]:
        """Replace the SHAs ``strategy`` tracks (active and proposed hydrated commits);
        returns those of its old SHAs that no strategy tracks any more."""
        with self._lock:
            return self._replace(strategy, frozenset(shas))

    def forget(self, strategy: str) -> set[str]:
        """Stop tracking ``strategy`` at all (another replica works on it now); returns
        the SHAs that no strategy tracks any more."""
        with self._lock:
            released = self._replace(strategy, frozenset())
            self._by_strategy.pop(strategy, None)
            self._alone.pop(strategy, None)
        return released

    def _replace(self, strategy: str, new: frozenset[str]) -> set[str]:
        """Under the lock: ``track``."""
        released: set[str] = set()
        old = self._by_strategy.get(strategy, frozenset())
        if new == old:
            return released
        alone = self._alone.get(strategy)
        if alone is None:
            alone = self._alone[strategy] = frozenset((strategy,))
        for sha in old - new:
            owners = self._by_sha.get(sha)
            if owners is not None:
                rest = owners - alone
                if rest:
                    self._by_sha[sha] = rest
                else:
                    del self._by_sha[sha]
                    released.add(sha)
        for sha in new - old:
            owners = self._by_sha.get(sha)
            self._by_sha[sha] = alone if owners is None else owners | alone
        self._by_strategy[strategy] = new
        return released

    def strategies_for(self, sha: str) -> set[str]:
        with self._lock:
            return set(self._by_sha.get(sha.lower(), ()))
