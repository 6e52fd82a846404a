"""The daemon's Runtime in a cluster: reconciles report back, and work goes to its owner.

Only what differs from standalone mode is here: a reconcile's end is reported (so the
controller writes the strategy's status), and the keys that webhooks and the API
enqueue are split: those this replica works on now (``mine``: with one leader, all of
them while it leads; sharded, those of the repositories whose shard it holds) go to
its own queue, the others to ``forward``. A key dequeued that is not ours any more (its
shard moved while it waited) raises ``NotOwner``, which the workers drop. The sharded
mode reaches the runtime through a few methods of its own as shards move (the port
``promoter.kube.shards.transfer.RuntimePort``): what it caches forgotten, its mirrors
refreshed, what it keeps of a repository let go of, its share of the SCM budgets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager

from starlette.types import ASGIApp

from promoter.config import Config
from promoter.daemon import Observer, Outcome, Runtime, StrategyView, Workers, every_repository
from promoter.errors import NotOwner
from promoter.http import Api
from promoter.kube.runtime.scm import ClusterScm
from scm_plugins.fleet import Fleet
from scm_plugins.protocol import ScmPlugin

Forward = Callable[[list[str], bool], None]
"""Hand keys to the replica that works on them; the flag: only a status changed (wake)."""


class ClusterRuntime(Runtime):
    def __init__(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer],
        mine: Callable[[str], bool],
        forward: Forward,
        reconciled: Callable[[str, StrategyView | None], None],
        owns: Callable[[str], bool] = every_repository,
        push_guard: Callable[[str], AbstractContextManager[None]] | None = None,
        owner: Callable[[str], str | None] = lambda key: None,
        handing_over: bool = False,
    ) -> None:
        super().__init__(
            config, plugins=plugins, observers=observers, owns=owns, push_guard=push_guard
        )
        self._mine = mine
        self._forward = forward
        self._reconciled = reconciled
        self._owner = owner
        self._handing_over = handing_over
        self.workers = Workers(self.queue, self._reconcile, count=config.daemon.workers)
        self.app: ASGIApp | None = None
        """The HTTP app around this runtime (API, webhooks); set by whoever serves it."""
        self.api: Api | None = None
        """Its API (who calls, what they may read), set with ``app``."""

    def mine(self, key: str) -> bool:
        """Whether this replica works on strategy ``key`` now."""
        return self._mine(key)

    def owner(self, name: str) -> str | None:
        return self._owner(name)

    def view(self, name: str) -> StrategyView | None:
        """The last reconcile of ``name``; sharded, only while this replica works on it
        (what it saw before its shard moved away is stale)."""
        if self._handing_over and not self._mine(name):
            return None
        return super().view(name)

    def _reconcile(self, key: str) -> Outcome:
        """Reconcile ``key``; one that is not ours any more is dropped here, and goes to
        its owner when a webhook or a person brought it (they may still be waiting). A
        background read (a resync's, a take-over's, a timer's) is not passed on: the
        owner's take-over reads every strategy of the shard, and a key passed on is run
        first there, ahead of the work webhooks bring it."""
        try:
            if not self._mine(key):
                raise NotOwner(f"strategy {key} is worked on by another replica now")
            try:
                return self.reconciler.reconcile(key)
            finally:
                self._reconciled(key, self.reconciler.views.get(key))
        except NotOwner:
            if self.queue.hurried(key):
                self._forward([key], False)
            raise

    def _split(self, keys: Iterable[str]) -> tuple[list[str], list[str]]:
        """Ours and theirs (sharded, a runtime that is not running takes nothing: a
        stopping replica's keys go to the replica that takes its shards over)."""
        ours: list[str] = []
        theirs: list[str] = []
        taking = self.started or not self._handing_over
        for key in keys:
            (ours if taking and self._mine(key) else theirs).append(key)
        return ours, theirs

    def enqueue(self, keys: Iterable[str]) -> None:
        """Webhooks' and people's keys: ours go first in the queue (ahead of the reads of
        a shard just taken over), the others to their owner."""
        ours, theirs = self._split(keys)
        if ours:
            super().enqueue(ours)
            self.queue.hurry(ours)
        if theirs:
            self._forward(theirs, False)

    def wake(self, keys: Iterable[str]) -> None:
        ours, theirs = self._split(keys)
        if ours:
            super().wake(ours)
            self.queue.hurry(ours)
        if theirs:
            self._forward(theirs, True)

    def receive(self, keys: Iterable[str], *, wake: bool) -> list[str]:
        """Keys another replica forwarded: ours are queued; the others (they moved again)
        are returned for the slow road, never forwarded a second time."""
        known = [k for k in keys if self.config.strategy(k) is not None]
        ours, theirs = self._split(known)
        if ours:
            (super().wake if wake else super().enqueue)(ours)
            self.queue.hurry(ours)
        return theirs

    # --- what the sharded mode asks as shards move (``shards.transfer.RuntimePort``) ---

    def urgent(self) -> list[str]:
        return self.queue.urgent()

    def spread(self, keys: list[str], over: float) -> None:
        self.queue.add_spread(keys, over)

    def unsettle(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.settled.unsettle(key)

    def forget_repositories(self, repositories: set[str]) -> None:
        self.pr_cache.forget_repositories(repositories)
        self.status_cache.forget_repositories(repositories)
        for repo in repositories:
            self.mirrors.invalidate(repo)

    def reread(self, repository: str) -> None:
        """A write for ``repository`` may have been made without its answer: its pull
        requests and statuses are read back from the SCM, and its mirror fetched, before
        its strategies' next decisions."""
        self.forget_repositories({repository})
        self.unsettle(
            s.name for s in self.config.promotion_strategies if s.repository == repository
        )

    def refresh_ahead(self, repositories: list[str]) -> None:
        self.mirrors.refresh_ahead([self.config.repository(name) for name in repositories])

    def fetch(self, repository: str) -> None:
        self.mirrors.fresh(self.config.repository(repository))

    def let_go(self, repositories: list[str], strategies: list[str]) -> None:
        """Let go of what is kept about ``repositories`` and their ``strategies``: the
        views, the commits tracked and their statuses, pull requests, the mirrors' git
        processes (the clones stay on disk)."""
        self.reconciler.forget(strategies)
        moved = set(repositories)
        self.status_cache.forget_repositories(moved)
        self.pr_cache.forget_repositories(moved)
        self.mirrors.release(repositories)

    def share_budgets(self, shares: Mapping[str, float], fleets: Mapping[str, Fleet]) -> None:
        for name, share in shares.items():
            plugin = self.plugins.get(name)
            if isinstance(plugin, ClusterScm):
                plugin.spend_with(fleets.get(name))
                plugin.set_budget_share(share)

    def close(self) -> None:
        """Stop if started, and release what construction opened (``Runtime.stop``)."""
        self.stop()
