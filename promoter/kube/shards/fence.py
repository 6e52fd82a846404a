"""The write fence of a sharded replica: no write unless this replica holds the shard now.

Each shard Lease this replica holds is valid, on this process's monotonic clock, until
``renew_deadline`` after the *start* of its last successful renewal (a slow answer
shortens our hold, never another replica's wait, which is ``lease_duration`` from when
it last saw the Lease change). Every write (a merge, a pull request opened, updated or
closed, a comment, a commit status, a git push such as the ledger's, a status subresource)
runs inside ``writing(repository)``: it checks the clock first and refuses when the
hold has lapsed (``HoldLapsed``, temporary: the loop may renew it yet) or the shard is
not this replica's (``NotOwner``), so a replica that was paused past its lease (a
stopped process, a long GC, a lost network) writes nothing after it resumes, before its
loop has even run. ``writing`` also counts the writes in flight per shard: a shard being handed
over (``revoke``) takes no new write, and its Lease is released only once those in
flight have ended, so the next owner never races a write of ours.

The check is made again right before each request of a write is sent: ``writing`` puts
the shard's hold (``ShardHold``) in the write's context (``scm_plugins.hold``), which the
counted-call helper of the SCM plugins and the Kubernetes client ask before they send,
and which cuts each request's deadline to end before the hold does. So the wait for
room in a credential's budget, the reads before a write and the request itself are all
covered, not only the moment the write began.

What the fence cannot cover: a request already past that last check when the process
stops, and that resumes later than ``lease_duration - renew_deadline`` (5 s by
default): the microseconds between the check and the bytes leaving, and an in-process
SCM's own work (the local SCM's git commands). Merges still carry the expected head
SHA, and git pushes a lease on the old tip.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client import Counter as Metric

from promoter.errors import HoldLapsed, NotOwner
from promoter.metrics import REGISTRY
from scm_plugins.hold import holding

FENCED = Metric(
    "promoter_shard_fenced_writes_total",
    "Writes refused because this replica did not hold the repository's shard Lease",
    registry=REGISTRY,
)


class ShardFence:
    """Thread-safe; ``shard_of`` maps a repository's name to its shard's name."""

    def __init__(
        self,
        *,
        shard_of: Callable[[str], str],
        renew_deadline: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.shard_of = shard_of
        self.renew_deadline = renew_deadline
        self.clock = clock
        self._valid_until: dict[str, float] = {}
        self._revoked: set[str] = set()
        self._in_flight: Counter[str] = Counter()
        self._cond = threading.Condition()
        self.refused = 0

    # --- what the lease loop tells it ---------------------------------------------------

    def renewed(self, shard: str, started: float) -> None:
        """The shard's Lease was written by us; ``started`` is when that call began."""
        with self._cond:
            self._valid_until[shard] = started + self.renew_deadline

    def revoke(self, shard: str) -> None:
        """Hand-over begins: no new write on the shard (those in flight may end)."""
        with self._cond:
            self._revoked.add(shard)

    def drop(self, shard: str) -> None:
        """The Lease is released or lost: the shard is not ours at all."""
        with self._cond:
            self._valid_until.pop(shard, None)
            self._revoked.discard(shard)

    def in_flight(self, shard: str) -> int:
        with self._cond:
            return self._in_flight[shard]

    def wait_drained(self, shard: str, timeout: float) -> bool:
        """Wait until no write is in flight on ``shard``; False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._in_flight[shard] == 0, timeout)

    def held(self) -> set[str]:
        """The shards whose hold has not lapsed (revoked ones included)."""
        now = self.clock()
        with self._cond:
            return {s for s, until in self._valid_until.items() if now < until}

    # --- what writers call ---------------------------------------------------------------

    def owns(self, repository: str) -> bool:
        """Whether a write on ``repository`` may start now."""
        shard = self.shard_of(repository)
        with self._cond:
            return self._owns(shard)

    def claims(self, repository: str) -> bool:
        """Whether the repository is this replica's to work on: held, or its hold lapsed
        with nobody else holding it yet (its writes wait for the renewal)."""
        shard = self.shard_of(repository)
        with self._cond:
            return shard in self._valid_until and shard not in self._revoked

    def _owns(self, shard: str) -> bool:
        until = self._valid_until.get(shard)
        return until is not None and shard not in self._revoked and self.clock() < until

    def check(self, repository: str) -> None:
        """``NotOwner`` or ``HoldLapsed`` unless a write on ``repository`` may start now."""
        with self.writing(repository):
            pass

    def left(self, shard: str, repository: str) -> float:
        """Seconds the hold on ``shard`` has left; ``HoldLapsed`` (temporary) when it
        lapsed and nobody else holds it, ``NotOwner`` when it is not this replica's (or
        being handed over). Each refusal is counted."""
        with self._cond:
            until = self._valid_until.get(shard)
            left = until - self.clock() if until is not None else 0.0
            if until is not None and shard not in self._revoked and left > 0:
                return left
            self.refused += 1
            FENCED.inc()
            if until is not None and shard not in self._revoked:
                raise HoldLapsed(
                    f"the hold on {shard} lapsed (repository {repository})",
                    delay=self.renew_deadline / 3,
                )
            raise NotOwner(f"this replica does not hold {shard} (repository {repository})")

    @contextmanager
    def writing(self, repository: str) -> Iterator[None]:
        """Run one write on ``repository``; nothing is written unless the shard is held:
        ``HoldLapsed`` (temporary) when its hold lapsed and nobody else holds it,
        ``NotOwner`` when it is not this replica's (or being handed over). The same is
        asked again right before each request the write sends (``ShardHold``)."""
        shard = self.shard_of(repository)
        with self._cond:
            self.left(shard, repository)  # the condition's lock is reentrant
            self._in_flight[shard] += 1
        try:
            with holding(ShardHold(self, shard, repository)):
                yield
        finally:
            with self._cond:
                self._in_flight[shard] -= 1
                self._cond.notify_all()


class ShardHold:
    """One write's hold on its repository's shard (``scm_plugins.hold.Hold``)."""

    def __init__(self, fence: ShardFence, shard: str, repository: str) -> None:
        self.fence = fence
        self.shard = shard
        self.repository = repository

    def left(self) -> float:
        return self.fence.left(self.shard, self.repository)
