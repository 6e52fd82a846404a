"""A replica's mode: which work is its own, and what it does as that changes.

Kubernetes mode runs either with one leader (``promoter.kube.leadership.LeaderMode``:
the replica holding the leader Lease does all the work) or sharded
(``promoter.kube.shards.ShardedMode``: each replica works on the repositories whose
shard Leases it holds). The controller holds one ``Mode`` and asks it; it never asks
which one it holds. A mode drives the controller's side of the replica through
``Replica``, which the controller is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from starlette.types import Receive, Scope, Send

from promoter.config import Config
from promoter.daemon import Observer, StrategyView
from promoter.kube.client.api import Obj
from promoter.kube.resources.commit_status_sync import CommitStatusSync
from promoter.kube.resources.config_source import Assembled
from promoter.kube.resources.refresh import RefreshForwarder
from promoter.kube.resources.status_writer import StatusWriter
from promoter.kube.runtime.runtime import ClusterRuntime
from scm_plugins.protocol import ScmPlugin

Reconciled = Callable[[str, StrategyView | None], None]
"""Told when a reconcile of a strategy ended, with the view it left (None: none)."""


class Replica(Protocol):
    """The controller's side of a replica, as its mode drives it."""

    runtime: ClusterRuntime
    """The runtime of the moment (a changed configuration swaps in a new one)."""
    assembled: Assembled
    """The configuration built from the objects listed, and the objects left out."""
    writer: StatusWriter
    commit_statuses: CommitStatusSync
    forwarder: RefreshForwarder
    """The slow road to a strategy's owner: its object annotated through the API server."""

    def idle(self) -> None:
        """Replace the runtime with one that does not run (its reconcilers stop)."""

    def write_ready_statuses(self) -> None:
        """Write the status of what belongs to no repository (the leader's to write)."""

    def strategy_objects(self) -> list[Obj]:
        """The PromotionStrategy objects, as last listed or watched."""

    def signal(self) -> None:
        """Wake the controller's thread: something it acts on changed."""


class Routes(Protocol):
    """What a mode answers over HTTP before the replica's own app does."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> bool:
        """Answer the request when it is the mode's to answer; False to let the app."""

    async def close(self) -> None: ...


class Mode(Protocol):
    """Which work is this replica's, and what the replica does as it changes hands."""

    def start(self) -> None:
        """Start what the mode runs beside the controller (the shard Leases, the peers)."""

    def joined(self) -> bool:
        """Whether the replica knows which work is whose (sharded: after its first round)."""

    def works(self) -> bool:
        """Whether the runtime runs now."""

    def mine(self, key: str) -> bool:
        """Whether this replica works on strategy ``key`` now."""

    def writes_for(self, repository: str | None) -> bool:
        """Whether this replica writes for ``repository`` (None: for no repository)."""

    def writing(self, repository: str) -> AbstractContextManager[None]:
        """A context to write for ``repository`` in; it refuses before the write when this
        replica may not (the SCM plugins' guard)."""

    def runtime(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer],
        reconciled: Reconciled,
    ) -> ClusterRuntime:
        """A runtime for ``config`` that works on this replica's share of the work."""

    def run(self, runtime: ClusterRuntime) -> None:
        """A runtime just built for a changed configuration: start it if this replica works."""

    def step(self, *, leading: bool) -> None:
        """On the controller's thread, once the configuration is built: start or stop the
        runtime, take over and let go of what moved (``leading``: at the step's start)."""

    def write_status(self, repository: str | None, write: Callable[[], object]) -> None:
        """Run ``write`` (a strategy's status or an Event about it; ``repository``: its
        repository, None when it is no longer configured) when this replica writes for
        it, else do nothing."""

    def leave(self) -> None:
        """At SIGTERM, while the replica still answers: hand the work over and wait."""

    def hand_over(self) -> None:
        """The controller is stopping: hand the work over (its runtime stops next)."""

    def stop(self, *, release: bool) -> None:
        """Stop what ``start`` started; ``release=False`` leaves the Leases to expire."""

    def routes(self) -> Routes:
        """What the mode answers over HTTP (the replica's app asks it first)."""

    def describe(self) -> dict[str, Any]:
        """What ``/readyz`` says of the mode, besides whether the replica leads."""
