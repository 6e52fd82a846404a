"""Mirrors kept warm for the shards a replica would be given if a peer died.

The assignment is computed from the live members, so each replica knows which shards
it would take over at any one peer's death (``assignment.standby``). Their repositories
are cloned ahead of time, one at a time, on a thread of its own at the warm-up's lower
CPU priority (``transfer.background_priority``): a kill -9 is then followed by a fetch
of what moved since, not a clone, before the new owner's first reconcile. Each one is
cloned once; a take-over fetches it again (its mirror is invalidated then), so nothing
here keeps it fresh. Failures are left to the reconciles that need the mirror later.

Thread-safe: the Lease loop hands the shards over (``want``), the standby thread works
them off; the two share the sets behind one lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping

from promoter.kube.shards.assignment import standby
from promoter.kube.shards.transfer import background_priority

log = logging.getLogger("promoter.kube.sharding")


class StandbyMirrors:
    """``fetch(repository)``: clone or fetch its mirror (``RuntimePort.fetch``)."""

    def __init__(self, fetch: Callable[[str], None]) -> None:
        self._fetch = fetch
        self._lock = threading.Lock()
        self._warm: set[str] = set()
        """Repositories cloned already, here or by a take-over or a warm-up."""
        self._pending: list[str] = []
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.fetched = 0
        """Mirrors fetched by the standby thread so far."""

    def warmed(self, repositories: Collection[str]) -> None:
        """These are cloned already (held, or warmed up at join): never fetched here."""
        with self._lock:
            self._warm.update(repositories)

    def want(self, repositories: Collection[str]) -> None:
        """Clone, in the background, those of ``repositories`` not cloned yet; those
        asked for earlier and not reached yet are dropped unless asked for again (the
        membership moved on, and with it what this replica would be given)."""
        with self._lock:
            self._pending = sorted(set(repositories) - self._warm)
            if not self._pending or self._stop.is_set():
                return
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="standby", daemon=True)
                self._thread.start()

    def busy(self) -> bool:
        """Whether repositories asked for are still being cloned."""
        with self._lock:
            return self._thread is not None

    def stop(self) -> None:
        """Stop between two repositories (a clone under way finishes)."""
        self._stop.set()
        with self._lock:
            self._pending = []

    def _next(self) -> str | None:
        with self._lock:
            while self._pending:
                name = self._pending.pop(0)
                if name not in self._warm:
                    self._warm.add(name)
                    return name
            self._thread = None
            return None

    def _run(self) -> None:
        background_priority()
        while not self._stop.is_set():
            name = self._next()
            if name is None:
                return
            try:
                self._fetch(name)
                self.fetched += 1
            except Exception as exc:  # the reconciles that need it will say why
                with self._lock:
                    self._warm.discard(name)
                extra = {"repository": name, "error": str(exc)}
                log.info("standby mirror not fetched", extra=extra)


class LookAhead:
    """Tells ``standby`` the shards ``identity`` would be given if any one peer died
    (``assignment.standby``), once per change of the members or the shards' weights.
    Called by the Lease loop alone."""

    def __init__(self, identity: str, tell: Callable[[set[str]], None]) -> None:
        self.identity = identity
        self.tell = tell
        self._told_for: tuple[frozenset[str], dict[str, float]] | None = None

    def __call__(self, members: Mapping[str, str], weights: Mapping[str, float]) -> None:
        key = (frozenset(members), dict(weights))
        if key == self._told_for:
            return
        self._told_for = key
        self.tell(standby(weights, members, self.identity))
