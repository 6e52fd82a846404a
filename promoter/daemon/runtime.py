"""The daemon's working parts: mirrors, caches, ledger, queue, workers, timers, reconciler.

``Runtime(config, plugins=...)`` is given its SCM plugins (the composition root in
``promoter.wiring`` builds them); ``start`` runs the workers, timers and the watchdog,
``stop`` stops taking work and waits for the reconciles in flight, so nothing is left
half-pushed, then releases what the runtime holds (a runtime never started too: the
delivery log's thread, the plugins' processes, the mirrors' ``cat-file``).
It offers the HTTP layer two narrow ports: reading views, and commands.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import datetime
from typing import Any

from promoter import tuning
from promoter.activity import ACTIVITY
from promoter.config import Config, PromotionStrategy, Repository
from promoter.daemon.acting.events import Observer
from promoter.daemon.checks.gate_calls import GateCalls
from promoter.daemon.checks.probes import Probes
from promoter.daemon.loop.queue import WorkQueue
from promoter.daemon.loop.reconciler import Reconciler, StrategyView
from promoter.daemon.loop.resync import Resync
from promoter.daemon.loop.scheduler import Scheduler
from promoter.daemon.loop.workers import Workers
from promoter.daemon.memory import trim
from promoter.daemon.memory.settled import SettledIndex
from promoter.daemon.operations.manual import Operations
from promoter.daemon.reading import status_targets
from promoter.daemon.reading.freezes import Freezes
from promoter.daemon.reading.review_reads import ReviewReads
from promoter.daemon.reading.scope import every_repository, strategies_of
from promoter.errors import CommitNotFound
from promoter.git import GitMirror
from promoter.git.diff import changed_files
from promoter.git.pool import MirrorPool
from promoter.git.process.version import require_git
from promoter.models import CommitStatus, DryCommit, utcnow
from promoter.state.audit import AuditTrail
from promoter.state.ledger import GitLedger
from promoter.state.pulls import PullRequestCache
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from promoter.watchdog import Watchdog
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.runtime")

PARKED = "parked until its configuration or a webhook changes"

LEDGER_FLUSH_INTERVAL = 1.0
"""Healthy records are pushed to the ledger in git at most this long after they happen."""


class Runtime:
    def __init__(
        self,
        config: Config,
        *,
        plugins: dict[str, ScmPlugin],
        observers: Iterable[Observer] = (),
        clock: Callable[[], datetime] = utcnow,
        owns: Callable[[str], bool] = every_repository,
        push_guard: Callable[[str], AbstractContextManager[None]] | None = None,
    ) -> None:
        """``owns`` (Kubernetes mode, sharded): whether this replica works on a repository
        now; the timers leave the others alone. ``push_guard``: see ``MirrorPool``.
        ConfigError, before anything starts, when the git on the ``PATH`` is missing or
        too old (``require_git``)."""
        require_git()
        self.config = config
        self.state_dir = config.state_path()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.plugins = plugins
        self.owns = owns
        self.mirrors = MirrorPool(
            root=self.state_dir, credentials=self._credentials, push_guard=push_guard
        )
        self.status_cache = StatusCache(ttl=config.daemon.status_cache_ttl)
        self.sha_index = ShaIndex()
        self.pr_cache = PullRequestCache(max_age=config.daemon.resync_interval)
        self.ledger = GitLedger()
        self.audit = AuditTrail(self.state_dir / "audit", mirror_of=self._mirror_of, owns=owns)
        self.queue = WorkQueue(max_delay=config.daemon.max_backoff)
        self.settled = SettledIndex(self.status_cache, self.pr_cache)
        d = config.daemon
        calls = GateCalls(per_backend=d.gate_calls_per_backend)
        self.probes = Probes(
            calls=calls, workers=d.gate_workers, wake=self._gate_changed, max_backoff=d.max_backoff
        )
        self.reconciler = Reconciler(
            config=config,
            plugins=self.plugins,
            mirrors=self.mirrors,
            status_cache=self.status_cache,
            sha_index=self.sha_index,
            ledger=self.ledger,
            pr_cache=self.pr_cache,
            status_url=self.public_url,
            observers=list(observers),
            clock=clock,
            probes=self.probes,
            review_reads=ReviewReads(calls, max_backoff=d.max_backoff),
            settled=self.settled,
        )
        self.operations = Operations(self.reconciler)
        self.freezes = Freezes(config, self.ledger, self.mirrors.fresh, clock, owns=owns)
        self.workers = Workers(self.queue, self.reconciler.reconcile, count=config.daemon.workers)
        self.resync = Resync(
            config,
            self.queue,
            self.mirrors,
            self.settled,
            self.ledger,
            rounds=max(1, math.ceil(d.settled_recheck / max(d.resync_interval, 1.0))),
            owns=owns,
        )
        self.scheduler = Scheduler(
            config, self.queue, self.mirrors, plan=self.resync, index=self.settled, owns=owns
        )
        self.memory = trim.MemoryTrim(
            idle=self.queue.idle, finished=lambda: self.queue.finished, trim=tuning.libc_trim()
        )
        self.watchdog = Watchdog()
        """Reports locks held and git commands run past their deadline."""
        self.started = False
        self._closers: list[Any] = []

    @property
    def public_url(self) -> str:
        d = self.config.daemon
        return d.public_url or f"http://{d.host}:{d.port}"

    def _mirror_of(self, repo_name: str) -> GitMirror | None:
        if not self.has_repository(repo_name):
            return None
        return self.mirrors.get(self.config.repository(repo_name))

    def _credentials(self, repo: Repository) -> dict[str, str]:
        return dict(self.plugins[repo.scm_provider].git_environment(repo=repo))

    # --- what handlers and timers call -----------------------------------------------

    def strategies_of(self, repo_name: str) -> list[str]:
        return strategies_of(self.config, repo_name)

    def enqueue(self, keys: Iterable[str]) -> None:
        """Wake these strategies; their repositories are refreshed before they are read."""
        keys = list(keys)
        for key in keys:
            strategy = self.config.strategy(key)
            if strategy is not None:
                self.mirrors.invalidate(strategy.repository)
                self.settled.unsettle(key)
        self._heard(keys)
        self.queue.add_many(keys, unpark=True)

    def _gate_changed(self, key: str, delay: float) -> None:
        """A background check ended: its strategy is read again (at once when the result
        changed, else when the check is next due)."""
        self.queue.add_after(key, delay)

    def has_tip(self, repo_name: str, branch: str, sha: str) -> bool:
        """Whether the repository's mirror has ``branch`` at ``sha`` already (memory only)."""
        return self.mirrors.has_tip(repo_name, branch, sha)

    def wake(self, keys: Iterable[str]) -> None:
        """Wake these strategies for a new status of a commit they track: no ref moved,
        so their mirrors are trusted for their freshness window."""
        keys = list(keys)
        self._heard(keys)
        self.queue.add_many(keys, unpark=True)

    def _heard(self, keys: list[str]) -> None:
        """Webhooks about these strategies' repositories are flowing (``Resync``)."""
        found = (self.config.strategy(key) for key in keys)
        self.resync.heard({s.repository for s in found if s is not None})

    def parked(self) -> dict[str, str]:
        """Strategies set aside after a permanent error, with the error: a webhook, a
        moved ref or a configuration change tries them again."""
        return self.queue.parked()

    def unreachable(self) -> dict[str, str]:
        found = dict(self.scheduler.unreachable)
        for name, view in self.reconciler.all_views().items():
            if view.error and view.snapshot is None:
                strategy = self.config.strategy(name)
                if strategy is not None:
                    found.setdefault(strategy.repository, view.error)
        return found

    # --- the ports the HTTP layer uses ---------------------------------------------------

    def strategies(self) -> list[PromotionStrategy]:
        return list(self.config.promotion_strategies)

    def strategy(self, name: str) -> PromotionStrategy | None:
        return self.config.strategy(name)

    def view(self, name: str) -> StrategyView | None:
        view = self.reconciler.view(name)
        waiting = ACTIVITY.waiting(name)
        if waiting is not None:
            view = StrategyView(None, None, None, None) if view is None else view
            view = replace(view, waiting=waiting)
        reason = self.queue.parked().get(name)
        if view is None or reason is None:
            return view
        return replace(view, error=f"{PARKED}: {reason}")

    def owner(self, name: str) -> str | None:
        """The replica that works on strategy ``name`` (Kubernetes mode, sharded); None
        when this process works on every strategy."""
        return None

    def has_repository(self, name: str) -> bool:
        return any(r.name == name for r in self.config.repositories)

    def readiness(self) -> tuple[bool, dict[str, str]]:
        """Whether the daemon serves, and the repositories it cannot reach (with why)."""
        unreachable = self.unreachable()
        ready = self.started and len(unreachable) < max(1, len(self.config.repositories))
        return ready, unreachable

    def dry_history(self, name: str, *, limit: int) -> list[DryCommit]:
        strategy = self.config.strategy(name)
        if strategy is None:
            return []
        mirror = self.mirrors.get(self.config.repository(strategy.repository))
        return mirror.log(None, strategy.dry_branch, limit=limit)

    def scm_web(self, repo_name: str) -> tuple[str, str]:
        """A repository's clone URL and its SCM's kind, for the dashboard's links."""
        repo = next((r for r in self.config.repositories if r.name == repo_name), None)
        if repo is None:
            return "", ""
        found = (p for p in self.config.scm_providers if p.name == repo.scm_provider)
        provider = next(found, None)
        return repo.url, provider.kind if provider is not None else ""

    def changed_files(self, name: str, environment: str) -> list[tuple[str, str]]:
        """The hydrated files an environment's proposed commit changes from its active one
        (read in the mirror; call it off the event loop)."""
        strategy, view = self.config.strategy(name), self.reconciler.view(name)
        if strategy is None or view is None or view.snapshot is None:
            return []
        env = next((e for e in view.snapshot.environments if e.branch == environment), None)
        if env is None or env.active is None or env.proposed is None:
            return []
        mirror = self.mirrors.get(self.config.repository(strategy.repository))
        return changed_files(mirror, env.active.hydrated_sha, env.proposed.hydrated_sha)

    def resolve_commit(self, repo_name: str, sha: str) -> str:
        """The full SHA of commit ``sha`` (full, or a prefix naming one commit) of a repository.

        ``LookupError`` for an unknown repository, ``CommitNotFound`` when ``sha`` names
        no commit or several (the mirror is refreshed first: the commit may be new).
        """
        repo = next((r for r in self.config.repositories if r.name == repo_name), None)
        if repo is None:
            raise LookupError(f"no repository named {repo_name!r}")
        if len(sha) == 40:
            return sha
        full = self.mirrors.fresh(repo).resolve_commit(sha.lower())
        if full is None:
            raise CommitNotFound(
                f"{sha} names no single commit of {repo_name}; give more characters of the SHA"
            )
        return full

    def post_status(
        self, repo_name: str, sha: str, status: CommitStatus, *, force: bool = False
    ) -> list[str]:
        """Set a commit status through the repository's SCM and wake who tracks ``sha``.

        ``LookupError`` for an unknown repository; ``StatusNotRead`` (unless ``force``)
        when no environment reads ``status.key`` on ``sha``, naming the commits that
        would count; SCM errors as the plugin raises them.
        """
        repo = next((r for r in self.config.repositories if r.name == repo_name), None)
        if repo is None:
            raise LookupError(f"no repository named {repo_name!r}")
        if not force:
            status_targets.check(
                self.config,
                repo.name,
                sha,
                status.key,
                (lambda: self.mirrors.get(repo), lambda: self._refreshed(repo)),
                dry_of=lambda s: self._dry_commit(repo.name, s),
                tracking=self.sha_index.strategies_for(sha),
            )
        self.plugins[repo.scm_provider].set_commit_status(repo=repo, sha=sha, status=status)
        self.status_cache.put(repo.name, sha, status)
        keys = set(self.sha_index.strategies_for(sha))
        if keys:  # a commit they track: no ref moved
            self.wake(keys)
        else:
            keys = set(self.strategies_of(repo.name))
            self.enqueue(keys)
        return sorted(keys)

    def _refreshed(self, repo: Repository) -> GitMirror:
        """The repository's mirror, fetched now (a status may name a commit just pushed)."""
        self.mirrors.invalidate(repo.name)
        return self.mirrors.fresh(repo)

    def _dry_commit(self, repo_name: str, sha: str) -> list[str]:
        """What ``sha`` is as a dry commit in the last reconciles: "the dry commit X runs"."""
        found: list[str] = []
        for name in self.strategies_of(repo_name):
            view = self.reconciler.view(name)
            for env in view.snapshot.environments if view and view.snapshot else ():
                if env.active is not None and env.active.dry_sha == sha:
                    found.append(f"the dry commit {env.branch} runs")
                elif env.proposed is not None and env.proposed.dry_sha == sha:
                    found.append(f"the dry commit proposed to {env.branch}")
        return list(dict.fromkeys(found))

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        if self.started:
            return
        tuning.tune()
        self.watchdog.start()
        self.workers.start()
        self.scheduler.every(LEDGER_FLUSH_INTERVAL, self.ledger.flush_all, "ledger-flush")
        self.scheduler.every(LEDGER_FLUSH_INTERVAL, self.audit.flush_all, "audit-flush")
        self.scheduler.every(trim.TICK, self.memory.tick, "memory-trim")
        self.scheduler.start()
        self.scheduler.resync()
        self.started = True
        log.info(
            "promoter started",
            extra={"url": self.public_url, "strategies": len(self.config.promotion_strategies)},
        )

    def on_stop(self, closer: Any) -> None:
        """Close ``closer`` (anything with ``close()``) when the runtime stops."""
        self._closers.append(closer)

    def stop(self) -> None:
        """Stop working (when started), then release what the runtime holds; idempotent.
        A runtime built and never started releases what its construction opened."""
        started, self.started = self.started, False
        if started:
            self.scheduler.stop()
            finished = self.workers.stop(timeout=60)
            self.probes.close()
            self.ledger.flush_all()
            self.audit.flush_all()
        closers, self._closers = self._closers, []
        for closer in closers:
            closer.close()
        for plugin in self.plugins.values():
            plugin.close()
        self.mirrors.close()
        self.watchdog.stop()
        if started:
            log.info("promoter stopped", extra={"clean": finished})
