"""One ``GitMirror`` per configured repository, refreshed at most once per change.

A mirror is refreshed (``ls-remote``, then a fetch if anything moved) when it was
invalidated since its last refresh (a webhook, the ref poller or our own merge
said something moved) or when its last refresh is older than ``max_age`` (a minute).
Thread-safe: refreshes of one mirror are serialised by its refresh lock, taken before
the mirror's own (the order of the locks: ``promoter.git``); the pool's guard of its
table is a leaf, never held while a mirror is used.

A first start, and a replica taking shards over, refresh (clone) the mirrors *ahead*
of the reconciles that read them, one at a time in a thread of their own
(``refresh_ahead``): the reconciles take one core, a clone's git processes the other,
and no worker waits for a clone while the others wait for its mirror's lock.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from promoter.config import Repository
from promoter.git import GitMirror
from promoter.watchdog import WatchedLock

log = logging.getLogger("promoter.mirrors")

MAX_AGE = 60.0
"""A mirror not refreshed for this long is refreshed before it is read. Only a safety
net: whatever moves a ref says so (a push webhook, the ref poller, the promoter's own
merge, the periodic resync's one ``ls-remote`` per repository)."""


REFRESH_DEADLINE = 600.0
"""Seconds a refresh lock may be held: a refresh waits for the mirror's lock (held up to
two network timeouts by another refresh), then runs its own two network calls."""


@dataclass
class _Freshness:
    name: str
    lock: WatchedLock = field(init=False)
    invalidated: float = float("inf")
    refreshed: float = float("-inf")

    def __post_init__(self) -> None:
        self.lock = WatchedLock("mirror refresh", detail=self.name, deadline=REFRESH_DEADLINE)


class MirrorPool:
    """The mirrors of one state directory ``root``: ``<root>/mirrors/<name>.git``."""

    def __init__(
        self,
        *,
        root: Path,
        credentials: Callable[[Repository], Mapping[str, str]],
        max_age: float = MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
        push_guard: Callable[[str], AbstractContextManager[None]] | None = None,
    ) -> None:
        """``push_guard``: given a repository's name, the context its pushes run in
        (``GitMirror``'s ``push_guard``)."""
        self.root = root.absolute()
        self._credentials = credentials
        self._push_guard = push_guard
        self.max_age = max_age
        self._clock = clock
        self._mirrors: dict[str, GitMirror] = {}
        self._fresh: dict[str, _Freshness] = {}
        self._guard = WatchedLock("mirror pool")
        self._ahead: list[threading.Event] = []
        """One event per ``refresh_ahead`` under way, set to stop it."""

    def get(self, repo: Repository) -> GitMirror:
        with self._guard:
            mirror = self._mirrors.get(repo.name)
            if mirror is None:
                mirror = GitMirror(
                    name=repo.name,
                    url=repo.url,
                    root=self.root,
                    env=functools.partial(self._credentials, repo),
                    push_guard=(
                        functools.partial(self._push_guard, repo.name)
                        if self._push_guard is not None
                        else nullcontext
                    ),
                )
                self._mirrors[repo.name] = mirror
                self._fresh[repo.name] = _Freshness(repo.name)
            return mirror

    def release(self, names: Sequence[str]) -> None:
        """Stop the persistent git processes of the mirrors of ``names`` (Kubernetes mode,
        sharded: their shard moved to another replica); the clones stay on disk, and a
        mirror used again is refreshed first and starts its processes again. The
        processes are stopped in a thread of their own: a mirror busy in a fetch from a
        git server that hangs holds its lock up to the fetch's timeout, and the caller
        (the controller's thread) does not wait for that."""
        for name in names:
            self.invalidate(name)
        with self._guard:
            mirrors = [self._mirrors[n] for n in names if n in self._mirrors]

        def stop() -> None:
            for mirror in mirrors:
                mirror.close()

        if mirrors:
            threading.Thread(target=stop, name="mirror-release", daemon=True).start()

    def close(self) -> None:
        """Stop every mirror's persistent git processes (a mirror used again starts them
        again). A runtime that stops, or that a configuration change replaces, calls it:
        its mirrors' ``cat-file`` processes would otherwise run until they are collected."""
        with self._guard:
            mirrors = list(self._mirrors.values())
            for stop in self._ahead:
                stop.set()
            self._ahead.clear()
        for mirror in mirrors:
            mirror.close()

    def refresh_ahead(self, repos: Sequence[Repository]) -> threading.Thread:
        """Refresh ``repos`` in order, one at a time, in a thread of its own (returned,
        started): a first start's reconciles, queued in the same order, find their
        mirrors cloned. A failure is left to those reconciles, which refresh again and
        say why. ``close`` stops it between two repositories."""
        stop = threading.Event()
        with self._guard:
            self._ahead.append(stop)

        def run() -> None:
            try:
                for repo in repos:
                    if stop.is_set():
                        return
                    try:
                        self.fresh(repo)
                    except Exception as exc:
                        log.info(
                            "not refreshed ahead",
                            extra={"repository": repo.name, "error": str(exc)},
                        )
            finally:
                with self._guard:
                    if stop in self._ahead:
                        self._ahead.remove(stop)

        thread = threading.Thread(target=run, name="refresh-ahead", daemon=True)
        thread.start()
        return thread

    def has_tip(self, name: str, branch: str, sha: str) -> bool:
        """Whether mirror ``name`` already has ``branch`` at ``sha`` (memory only, no git)."""
        with self._guard:
            mirror = self._mirrors.get(name)
        return mirror is not None and mirror.known_tip(branch) == sha

    def invalidate(self, name: str) -> None:
        """Something moved in the repository: the next ``fresh`` refreshes."""
        with self._guard:
            state = self._fresh.get(name)
        if state is not None:
            state.invalidated = self._clock()

    def refreshed(self, name: str) -> bool:
        """Whether the mirror of ``name`` was ever refreshed in this process."""
        with self._guard:
            state = self._fresh.get(name)
        return state is not None and state.refreshed > float("-inf")

    def fresh(self, repo: Repository) -> GitMirror:
        """The mirror, refreshed unless it is known to be up to date."""
        mirror = self.get(repo)
        state = self._fresh[repo.name]
        with state.lock:
            now = self._clock()
            stale = state.invalidated >= state.refreshed or now - state.refreshed > self.max_age
            if stale:
                state.refreshed = now
                state.invalidated = float("-inf")
                try:
                    mirror.refresh()
                except BaseException:
                    state.invalidated = now
                    raise
        return mirror

    def poll(self, repo: Repository) -> bool:
        """Refresh now; True when anything moved in the remote since the last poll (a
        fetch made meanwhile by a reconcile or a ledger write counts: it took the change
        first, and the strategies still need waking)."""
        mirror = self.get(repo)
        state = self._fresh[repo.name]
        with state.lock:
            now = self._clock()
            try:
                moved = mirror.refresh()
            except BaseException:
                state.invalidated = now
                raise
            state.refreshed = now
            if state.invalidated <= now:
                state.invalidated = float("-inf")
            return mirror.take_moved() or moved
