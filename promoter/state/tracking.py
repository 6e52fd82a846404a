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

    def track(self, strategy: str, shas: Iterable[str]) -> None:
        """Replace the SHAs ``strategy`` tracks (active and proposed hydrated commits)."""
        new = frozenset(shas)
        with self._lock:
            old = self._by_strategy.get(strategy, frozenset())
            if new == old:
                return
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
            for sha in new - old:
                owners = self._by_sha.get(sha)
                self._by_sha[sha] = alone if owners is None else owners | alone
            self._by_strategy[strategy] = new

    def strategies_for(self, sha: str) -> set[str]:
        with self._lock:
            return set(self._by_sha.get(sha.lower(), ()))
