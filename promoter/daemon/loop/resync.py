"""The periodic resync: one ``ls-remote`` per repository, then a reconcile of what may
have changed, and of the rest in turn.

A strategy whose refs or ledger moved is enqueued at once. One that waits for something
(a gate, a PR, a person), or whose last reconcile failed, has its unsettled reads
dropped, so that they come from the SCM again (conditional reads make that free where
the SCM supports them), and is read again over the next resync interval: the first at
once, the rest evenly spread, so that a webhook's work never queues behind thousands of
them. A *quiet* one (``promoter.daemon.memory.settled``: every environment settled, nothing
done, nothing asked) whose refs and ledger did not move is left alone: nothing it read
can have changed, unless a webhook was lost. Settled reads are dropped in turn, those
of a ``1/rounds`` of the strategies per resync (the *sweep*, by a hash of the name);
the quiet strategies of the turn are spread over the next interval too. A lost webhook
is healed

* within two resync intervals for what a strategy waits for while the repository's
  webhooks are *silent* (nothing heard about it in the last interval);
* within ``rounds`` resync intervals (``daemon.settledRecheck``) plus one for what it
  waits for while they are *flowing* (something was heard about the repository in the
  last interval: a webhook, a status through the API): the hook works, a delivery lost
  now and then is healed in turn, and the resync reads only a share of the waiting
  strategies too;
* within ``rounds + 1`` resync intervals (``daemon.settledRecheck`` plus one) for a
  settled commit or a settled environment's pull requests.

A repository whose mirror was never refreshed (the first start) has all its strategies
enqueued at once, and the mirrors of those repositories are cloned ahead of their
reconciles, one at a time, in the order their strategies were queued
(``MirrorPool.refresh_ahead``).
"""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from promoter.config import Config, Repository
from promoter.daemon.loop.queue import WorkQueue
from promoter.daemon.memory.settled import Seen, SettledIndex, notes_tips
from promoter.daemon.reading.scope import every_repository
from promoter.git import GitMirror
from promoter.git.pool import MirrorPool
from promoter.state.ledger import GitLedger, LedgerUnreadable

log = logging.getLogger("promoter.resync")


@dataclass
class ResyncCounts:
    """What one resync enqueued, by why."""

    waiting: int = 0
    moved: int = 0
    skipped: int = 0
    flowing: list[str] = field(default_factory=list)
    """Repositories whose webhooks were heard in the last interval."""
    spread: list[str] = field(default_factory=list)
    """Strategies that wait for something, read again over the next interval (the first
    at once), so that a webhook's work never queues behind the whole of them."""
    swept: list[str] = field(default_factory=list)
    """Quiet strategies whose turn it is, spread over the next interval."""
    unreachable: list[str] = field(default_factory=list)
    first: list[Repository] = field(default_factory=list)
    """Repositories whose mirrors were never refreshed: cloned ahead of their reconciles."""


@dataclass
class Resync:
    config: Config
    queue: WorkQueue
    mirrors: MirrorPool
    index: SettledIndex
    ledger: GitLedger
    rounds: int = 1
    """Resyncs over which the quiet strategies are swept once."""
    done: int = 0
    """Resyncs run so far."""
    last: ResyncCounts | None = None
    """What the last resync did."""
    heard_at: dict[str, float] = field(default_factory=dict)
    """When something was last heard about each repository (monotonic seconds)."""
    owns: Callable[[str], bool] = every_repository
    """The repositories to check (Kubernetes mode: those this replica holds now)."""

    def turn_of(self, name: str) -> int:
        """The resync (modulo ``rounds``) that sweeps strategy ``name``: by a hash of its
        name, so that a turn takes a fair share of every kind of strategy."""
        return zlib.crc32(name.encode()) % max(self.rounds, 1)

    def heard(self, repositories: Iterable[str]) -> None:
        """A webhook (or a status through the API) about these repositories arrived."""
        now = time.monotonic()
        for name in repositories:
            self.heard_at[name] = now

    def __call__(self) -> ResyncCounts:
        counts = ResyncCounts()
        started = time.monotonic()
        turn = self.done % max(self.rounds, 1)
        self.done += 1
        by_repo: dict[str, list[str]] = {}
        for strategy in self.config.promotion_strategies:
            by_repo.setdefault(strategy.repository, []).append(strategy.name)
        for repo in self.config.repositories:
            names = by_repo.get(repo.name)
            if names and self.owns(repo.name):
                self._repository(repo, names, turn=turn, started=started, counts=counts)
        if counts.first:
            self.mirrors.refresh_ahead(counts.first)
        interval = self.config.daemon.resync_interval
        self.queue.add_spread(counts.spread, interval, soft=True)
        self.queue.add_spread(counts.swept, interval, start=1)
        self.last = counts
        log.info(
            "resync",
            extra={
                "waiting": counts.waiting,
                "moved": counts.moved,
                "swept": len(counts.swept),
                "skipped": counts.skipped,
                "flowing": len(counts.flowing),
                "unreachable": counts.unreachable,
            },
        )
        return counts

    def _repository(
        self,
        repo: Repository,
        names: list[str],
        *,
        turn: int,
        started: float,
        counts: ResyncCounts,
    ) -> None:
        """Poll one repository's refs; enqueue its strategies that moved, note those that
        wait for something in ``counts.spread`` and its quiet ones whose turn it is in
        ``counts.swept``."""
        if not self.mirrors.refreshed(repo.name):
            self.mirrors.invalidate(repo.name)
            self._enqueue(names, counts)
            counts.first.append(repo)
            return
        try:
            moved = self.mirrors.poll(repo)
        except Exception as exc:  # each strategy's reconcile fails with the reason
            log.warning("resync poll failed", extra={"repository": repo.name, "error": str(exc)})
            counts.unreachable.append(repo.name)
            self._enqueue(names, counts)
            return
        mirror = self.mirrors.get(repo)
        heard = self.heard_at.get(repo.name)
        flowing = heard is not None and started - heard <= self.config.daemon.resync_interval
        if flowing:
            counts.flowing.append(repo.name)
        waiting, changed = self._sort(names, mirror, turn=turn, flowing=flowing, counts=counts)
        if moved:
            self.queue.unpark(waiting)
        self.queue.add_many(changed, unpark=True)
        counts.spread.extend(waiting)
        counts.waiting += len(waiting)
        counts.moved += len(changed)

    def _sort(
        self, names: list[str], mirror: GitMirror, *, turn: int, flowing: bool, counts: ResyncCounts
    ) -> tuple[list[str], list[str]]:
        """One repository's strategies: those that wait for something (their reads dropped)
        and those whose refs, notes or ledger moved (unsettled); the quiet ones of this turn
        (every read dropped) go to ``counts.swept``, the others are skipped."""
        tips = notes_tips(mirror)
        waiting, changed = [], []
        for name in names:
            seen = self.index.get(name)
            mine = self.turn_of(name) == turn
            if seen is None or not seen.quiet:
                if seen is not None and flowing and not mine:
                    if not self._moved(name, seen, mirror, tips):
                        counts.skipped += 1
                        continue
                    self.index.unsettle(name)
                    changed.append(name)
                    continue
                if seen is not None:
                    self.index.drop(seen, everything=mine)
                waiting.append(name)
            elif self._moved(name, seen, mirror, tips):
                self.index.unsettle(name)
                changed.append(name)
            elif mine:
                self.index.unsettle(name, forget=True)
                counts.swept.append(name)
            else:
                counts.skipped += 1
        return waiting, changed

    def _enqueue(self, names: list[str], counts: ResyncCounts) -> None:
        for name in names:
            seen = self.index.get(name)
            if seen is not None:
                self.index.drop(seen, everything=False)
        self.queue.add_many(names, soft=True)
        counts.waiting += len(names)

    def _moved(
        self, name: str, seen: Seen, mirror: GitMirror, tips: tuple[str | None, ...]
    ) -> bool:
        """Whether anything the strategy's last read came from moved since."""
        if any(mirror.branch_sha(branch) != sha for branch, sha in seen.refs):
            return True
        if seen.notes[:-1] != tips[:-1]:  # hydrator or lineage notes
            return True
        if seen.notes[-1] == tips[-1]:
            return False
        try:  # the ledger's ref moved (every write moves it): did this strategy's notes?
            return any(
                self.ledger.read(mirror, name, branch) != ledger for branch, ledger in seen.ledgers
            )
        except LedgerUnreadable:
            return True
