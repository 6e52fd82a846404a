"""What a replica's runtime is told as its shards come and go: warmed up for those it is
about to be given, told to take over those gained, to read again what webhooks named
for those regained, and to let go of those lost.

The runtime is reached through ``RuntimePort`` alone (``ClusterRuntime`` is one): what
the sharded mode may ask of it, and nothing else of the daemon's runtime.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from promoter.config import Config
from scm_plugins.fleet import Fleet

log = logging.getLogger("promoter.kube.sharding")

TAKE_OVER_SPREAD = 0.005
"""Seconds between two reads of a shard just taken over (1,000 strategies: 5 s)."""
AT_REST_SPREAD = 60.0
"""The strategies at rest of a shard just taken over are read over this long (at most
the resync interval)."""
BACKGROUND_NICE = 10
"""How much lower the warm-up's threads, and the git processes they start, run. A
replica that joins in a rolling update shares its node's cores with the replicas that
serve meanwhile, and nothing but its own joining waits for its warm-up."""


class RuntimePort(Protocol):
    """What the sharded mode does to a replica's runtime as its shards move."""

    @property
    def config(self) -> Config: ...

    def urgent(self) -> list[str]:
        """The keys webhooks and people queued that have not run yet, in order."""

    def enqueue(self, keys: Iterable[str]) -> None:
        """Run ``keys`` first (webhooks' and people's work)."""

    def spread(self, keys: list[str], over: float) -> None:
        """Run ``keys`` spread evenly over ``over`` seconds (background reads)."""

    def unsettle(self, keys: Iterable[str]) -> None:
        """Read these strategies' settled reads again at their next reconcile."""

    def forget_repositories(self, repositories: set[str]) -> None:
        """Drop the statuses and pull requests cached for ``repositories``, and fetch
        their mirrors again before they are next read."""

    def refresh_ahead(self, repositories: list[str]) -> None:
        """Refresh the mirrors of ``repositories`` in the background, in this order."""

    def fetch(self, repository: str) -> None:
        """Clone or fetch ``repository``'s mirror now."""

    def let_go(self, repositories: list[str], strategies: list[str]) -> None:
        """Let go of what is kept about ``repositories`` and their ``strategies``."""

    def share_budgets(self, shares: Mapping[str, float], fleets: Mapping[str, Fleet]) -> None:
        """Give each SCM provider's credential ``shares[provider]`` of its limits, and the
        fleet's log of its windows ``fleets[provider]`` (``scm_plugins.fleet``)."""


def take_over(
    runtime: RuntimePort, repositories: set[str], *, urgent: set[str], at_rest: set[str]
) -> None:
    """Shards just gained: forget what was cached about their repositories (another
    replica worked on them meanwhile) and read every strategy of them afresh: the
    ``urgent`` ones (a webhook named them lately) at once, the others spread over
    ``TAKE_OVER_SPREAD`` each, and those ``at_rest`` (their status says every
    environment is up to date) over ``AT_REST_SPREAD``: the work webhooks bring
    meanwhile never waits behind a whole shard's reads, nor shares the CPU with
    all of them at once. Their mirrors are refreshed ahead of those reads, the
    repositories of the urgent ones first (``MirrorPool.refresh_ahead``): one this
    replica never held is cloned there, not by a reconcile other workers wait for."""
    config = runtime.config
    runtime.forget_repositories(repositories)
    strategies = [s for s in config.promotion_strategies if s.repository in repositories]
    keys = [s.name for s in strategies]
    first = [k for k in keys if k in urgent]
    named = {s.repository for s in strategies if s.name in urgent}
    known = {r.name for r in config.repositories if r.name in repositories}
    runtime.refresh_ahead(sorted(known, key=lambda name: (name not in named, name)))
    active = [k for k in keys if k not in urgent and k not in at_rest]
    resting = [k for k in keys if k not in urgent and k in at_rest]
    runtime.unsettle(active + resting)
    counts = {"strategies": len(keys), "urgent": len(first), "at_rest": len(resting)}
    log.info("taking over", extra={"repositories": len(repositories), **counts})
    runtime.enqueue(first)
    runtime.spread(active, TAKE_OVER_SPREAD * len(active))
    over = max(AT_REST_SPREAD, TAKE_OVER_SPREAD * len(resting))
    runtime.spread(resting, min(over, config.daemon.resync_interval))


def regain(runtime: RuntimePort, repositories: set[str], *, recent: set[str]) -> None:
    """Shards held again after a lapse, nobody else having held them: only the
    strategies of their repositories that webhooks named meanwhile (``recent``) are
    read again."""
    runtime.enqueue(
        [
            s.name
            for s in runtime.config.promotion_strategies
            if s.repository in repositories and s.name in recent
        ]
    )


def let_go(runtime: RuntimePort, repositories: set[str], *, kept: Callable[[str], bool]) -> None:
    """Shards moved to another replica: let go of what was kept about their repositories
    (the strategies' views, the commits they tracked and those commits' statuses, pull
    requests, the mirrors' git processes; the clones stay on disk). Those ``kept`` (held
    again meanwhile) are not let go of."""
    names = sorted(r for r in repositories if not kept(r))
    moved = set(names)  # one pass over the strategies, not one per repository
    keys = [s.name for s in runtime.config.promotion_strategies if s.repository in moved]
    runtime.let_go(names, keys)
    log.info("let go of the repositories of shards moved away", extra={"repositories": len(names)})


def background_priority() -> None:
    """Lower the calling thread's CPU priority by ``BACKGROUND_NICE``: on Linux the nice
    value is a thread's, and the processes it starts inherit it; the process's other
    threads keep theirs. Nothing where the system refuses or knows no such thing."""
    try:
        thread = threading.get_native_id()
        nice = os.getpriority(os.PRIO_PROCESS, thread)
        os.setpriority(os.PRIO_PROCESS, thread, min(19, nice + BACKGROUND_NICE))
    except (OSError, AttributeError):
        log.debug("warm-up priority unchanged", exc_info=True)


def warm_up(runtime: RuntimePort, repositories: Iterable[str]) -> int:
    """Clone or fetch ``repositories`` (four at a time, at a lower CPU priority:
    ``background_priority``); how many."""
    repos = sorted(repositories)

    def fetch(name: str) -> None:
        try:
            runtime.fetch(name)
        except Exception as exc:  # the reconciles will say why
            log.info("not warmed up", extra={"repository": name, "error": str(exc)})

    with ThreadPoolExecutor(
        max_workers=4, thread_name_prefix="warm-up", initializer=background_priority
    ) as pool:
        list(pool.map(fetch, repos))
    return len(repos)
