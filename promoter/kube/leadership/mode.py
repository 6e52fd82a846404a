"""The leader mode: the replica holding the leader Lease does all the work.

Gaining the Lease starts the runtime (workers, timers, a full resync) and has every
CommitStatus object checked again; losing it stops the runtime, after the SCM plugins
were fenced already, at the renew deadline (``leader_guard``). A replica that does not
lead forwards the work webhooks and people bring it through the strategy's annotation
(``RefreshForwarder``), which the leader's watch sees.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from starlette.types import Receive, Scope, Send

from promoter.config import Config
from promoter.daemon import Observer
from promoter.errors import ScmUnavailable
from promoter.kube.runtime.mode import Reconciled, Replica, Routes
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.runtime.scm import Guard
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.kube.controller")


class NotLeader(ScmUnavailable):
    """This replica does not hold the Lease: it must not write."""


def leader_guard(is_leader: Callable[[], bool]) -> Guard:
    """The guard of a replica that writes only while it leads."""

    @contextmanager
    def guard(repository: str) -> Iterator[None]:
        if not is_leader():
            raise NotLeader("this replica is not the leader; it writes nothing")
        yield

    return guard


class NoRoutes:
    """One leader answers nothing over HTTP before the replica's own app."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> bool:
        return False

    async def close(self) -> None:
        return None


class LeaderMode:
    """A ``promoter.kube.runtime.mode.Mode``: all the work while ``leading()``."""

    def __init__(self, *, replica: Replica, leading: Callable[[], bool]) -> None:
        self.replica = replica
        self.leading = leading
        self._guard = leader_guard(leading)

    # --- which work is ours ----------------------------------------------------------------

    def joined(self) -> bool:
        return True

    def works(self) -> bool:
        return self.leading()

    def mine(self, key: str) -> bool:
        return self.leading()

    def writes_for(self, repository: str | None) -> bool:
        return self.leading()

    def writing(self, repository: str) -> AbstractContextManager[None]:
        return self._guard(repository)

    def write_status(self, repository: str | None, write: Callable[[], object]) -> None:
        if self.leading():
            write()

    # --- the runtime -------------------------------------------------------------------------

    def runtime(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer],
        reconciled: Reconciled,
    ) -> ClusterRuntime:
        """A runtime that works on every strategy while this replica leads, and hands
        the others' keys to the leader through their annotation."""
        forwarder = self.replica.forwarder
        return ClusterRuntime(
            config,
            plugins=plugins,
            observers=observers,
            mine=self.mine,
            forward=lambda keys, wake: forwarder.forward(keys),
            reconciled=reconciled,
        )

    def run(self, runtime: ClusterRuntime) -> None:
        if self.leading():
            runtime.start()

    def step(self, *, leading: bool) -> None:
        """Start the runtime on gaining the Lease (every CommitStatus checked again, the
        Ready statuses written), stop it on losing the Lease."""
        replica = self.replica
        if leading and not replica.runtime.started:
            replica.writer.forget()
            replica.commit_statuses.mark_all()
            replica.runtime.start()
            replica.write_ready_statuses()
        elif not leading and replica.runtime.started:
            log.warning("stopping the reconcilers: not the leader")
            replica.idle()
        if leading:
            replica.commit_statuses.mirror_pending()

    # --- lifecycle: the Lease is the controller's elector ---------------------------------

    def start(self) -> None:
        return None

    def leave(self) -> None:
        """Nothing to hand over before the server closes: the Lease is released at stop."""

    def hand_over(self) -> None:
        return None

    def stop(self, *, release: bool) -> None:
        return None

    def routes(self) -> Routes:
        return NoRoutes()

    def describe(self) -> dict[str, Any]:
        return {}
