"""Timers: the periodic resync and the ref polling of repositories without webhooks.

Jobs run in apscheduler's thread pool, never on the event loop; they only
refresh mirrors and enqueue keys.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from apscheduler.schedulers.background import BackgroundScheduler

from promoter.config import Config, Repository
from promoter.daemon.loop.queue import WorkQueue
from promoter.daemon.memory.settled import SettledIndex
from promoter.daemon.reading.scope import every_repository, strategies_of
from promoter.git.pool import MirrorPool

log = logging.getLogger("promoter.scheduler")
# A poll still running when the next is due is skipped on purpose; not worth a warning.
logging.getLogger("apscheduler.scheduler").setLevel(logging.ERROR)


def poll_interval(config: Config, repo: Repository) -> float | None:
    """How often to poll a repository's refs: its own setting, else the local default."""
    if repo.poll_interval is not None:
        return repo.poll_interval or None
    if config.provider(repo.scm_provider).kind == "local":
        return config.daemon.poll_interval
    return None


class Scheduler:
    def __init__(
        self,
        config: Config,
        queue: WorkQueue,
        mirrors: MirrorPool,
        *,
        plan: Callable[[], object],
        index: SettledIndex,
        owns: Callable[[str], bool] = every_repository,
    ) -> None:
        """``owns``: the repositories to poll (Kubernetes mode: those this replica holds)."""
        self.config = config
        self.owns = owns
        self._plan = plan
        self._index = index
        self.queue = queue
        self.mirrors = mirrors
        self.unreachable: dict[str, str] = {}
        self._scheduler = BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30}
        )

    def resync(self) -> None:
        """Heal any missed webhook: ``plan`` (``promoter.daemon.loop.resync``) checks every
        mirror (one ``ls-remote`` per repository, a fetch only where a ref moved) and
        says what to read again."""
        self._plan()

    def poll(self, repo: Repository) -> None:
        """Refresh the mirror; wake its strategies when a ref moved, or when the repository
        became unreachable or reachable again, so that each strategy shows it (its
        reconcile fails on the same mirror, with the reason) rather than only /readyz."""
        if not self.owns(repo.name):
            return
        try:
            moved = self.mirrors.poll(repo)
        except Exception as exc:
            newly = repo.name not in self.unreachable
            self.unreachable[repo.name] = str(exc)
            log.warning("poll failed", extra={"repository": repo.name, "error": str(exc)})
            if newly:
                self.queue.add_many(strategies_of(self.config, repo.name))
            return
        recovered = self.unreachable.pop(repo.name, None) is not None
        if moved or recovered:  # a change: strategies parked after a permanent error run again
            keys = strategies_of(self.config, repo.name)
            for key in keys:
                self._index.unsettle(key)
            self.queue.add_many(keys, unpark=True)

    def start(self) -> None:
        self._add(self.resync, self.config.daemon.resync_interval, "resync")
        for repo in self.config.repositories:
            interval = poll_interval(self.config, repo)
            if interval:
                self._add(functools.partial(self.poll, repo), interval, f"poll:{repo.name}")
        self._scheduler.start()

    def every(self, seconds: float, func: Callable[[], None], name: str) -> None:
        """Run ``func`` every ``seconds`` on the scheduler's threads (never the event loop)."""
        self._add(func, seconds, name)

    def _add(self, func: Callable[[], None], seconds: float, name: str) -> None:
        self._scheduler.add_job(func, "interval", seconds=max(seconds, 0.1), id=name, name=name)

    def stop(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
