"""The reconciler: for one strategy key, read fresh, decide, act, remember the verdicts.

Level-triggered and idempotent: it never looks at which event woke it, and a
second run on unchanged state carries out no action.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime

from promoter.config import Config, Repository
from promoter.daemon.acting.events import Observer
from promoter.daemon.acting.executor import Executor
from promoter.daemon.acting.merges import UnconfirmedMerges
from promoter.daemon.acting.outcome import Outcome
from promoter.daemon.checks.probes import Probes
from promoter.daemon.memory.kept import (
    KeptDecision,
    KeptSnapshot,
    kept_decision,
    kept_snapshot,
)
from promoter.daemon.memory.settled import SettledIndex, notes_tips
from promoter.daemon.reading.commit_facts import MergeConflicts
from promoter.daemon.reading.queue_detection import QueueDetection
from promoter.daemon.reading.reader import SnapshotReader
from promoter.daemon.reading.review_reads import ReviewReads
from promoter.daemon.reading.shapes import Shapes
from promoter.daemon.reading.signature_check import SignatureReading
from promoter.engine import Decision, EnvState, RecordHealthy, Snapshot, decide
from promoter.errors import ScmOutage
from promoter.git.lineage import Lineage
from promoter.git.pool import MirrorPool
from promoter.logs import reconcile_context
from promoter.metrics import RECONCILE_DURATION, RECONCILE_TOTAL
from promoter.models import utcnow
from promoter.state.ledger import GitLedger
from promoter.state.pulls import PullRequestCache
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from scm_plugins.protocol import ForgottenCommits, ScmPlugin

log = logging.getLogger("promoter.reconciler")


@dataclass(frozen=True)
class StrategyView:
    """The last reconcile of a strategy, as the API and the status table show it: what is
    kept of its snapshot and its decision (``daemon.memory.kept``), not the models."""

    snapshot: KeptSnapshot | None
    decision: KeptDecision | None
    error: str | None
    reconciled_at: datetime | None
    waiting: str | None = None
    """What a reconcile running long waits on now (a slow SCM call): ``promoter.activity``."""
    outage: bool = False
    """``error`` is an outage the SCM reported (``ScmOutage``): the environments wait for
    the SCM (``blocked``, its words as their reason); they are not in error."""

    def failure(self) -> tuple[str, str]:
        """(state, reason) each environment shows after the failed reconcile."""
        if self.outage:
            return EnvState.BLOCKED.value, f"waiting for the SCM: {self.error}"
        return EnvState.ERROR.value, f"last reconcile failed: {self.error}"


@dataclass
class Reconciler:
    config: Config
    plugins: dict[str, ScmPlugin]
    mirrors: MirrorPool
    status_cache: StatusCache
    sha_index: ShaIndex
    ledger: GitLedger
    pr_cache: PullRequestCache
    status_url: str = ""
    observers: list[Observer] = field(default_factory=list)
    clock: Callable[[], datetime] = utcnow
    """What the engine is told the time is (a test may move it)."""
    probes: Probes = field(default_factory=Probes)
    """HTTP checks, Argo CD and Flux: run in the background, never in a reconcile."""
    review_reads: ReviewReads = field(default_factory=ReviewReads)
    unconfirmed: UnconfirmedMerges = field(default_factory=UnconfirmedMerges)
    views: dict[str, StrategyView] = field(default_factory=dict)
    signatures: SignatureReading = field(default_factory=SignatureReading)
    """Dry commits' verified signatures, kept across reconciles."""
    queue_detection: QueueDetection = field(default_factory=QueueDetection)
    """Which branches merge through the SCM's queue (``mergeQueue`` unset), kept."""
    settled: SettledIndex | None = None
    """What each reconcile read and which of it is settled, for the resync."""
    lineage: Lineage = field(default_factory=Lineage)
    conflicts: MergeConflicts = field(default_factory=MergeConflicts)
    shapes: Shapes = field(default_factory=Shapes)
    """Shared by every reader: dry SHAs and merge conflicts by immutable SHAs (and the
    notes parsed), and what each strategy's configuration gives its snapshots."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _key_locks: dict[str, threading.Lock] = field(default_factory=dict)
    _let_go_of: dict[str, int] = field(default_factory=dict)
    """How many times each strategy was let go of (``forget``): a reconcile in flight
    meanwhile lets go of what it kept again when it ends."""

    def plugin_for(self, repo: Repository) -> ScmPlugin:
        return self.plugins[repo.scm_provider]

    @contextlib.contextmanager
    def key_lock(self, key: str) -> Iterator[None]:
        """Held while a strategy is reconciled or operated on by hand: one at a time."""
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            yield

    def executor(self, plugin: ScmPlugin, reader: SnapshotReader) -> Executor:
        return Executor(
            plugin,
            reader,
            self.status_cache,
            self.pr_cache,
            self.ledger,
            self.observers,
            lambda r: self.mirrors.invalidate(r.name),
            self.unconfirmed,
        )

    def reconcile(self, key: str) -> Outcome:
        """Converge one strategy; raises TemporaryError (and others) for the queue to retry.
        Its log lines carry the strategy and a reconcile id (``logs.reconcile_context``)."""
        with reconcile_context(key), self.key_lock(key):
            let_go = self._let_go_of.get(key, 0)
            try:
                return self._reconcile(key)
            finally:
                if self._let_go_of.get(key, 0) != let_go:  # let go of while it ran
                    self.forget([key])

    def _reconcile(self, key: str) -> Outcome:
        strategy = self.config.strategy(key)
        if strategy is None:
            log.info("unknown strategy dropped", extra={"strategy": key})
            return Outcome()
        repo = self.config.repository(strategy.repository)
        plugin = self.plugin_for(repo)
        reader = self.reader(key, plugin)
        executor = self.executor(plugin, reader)
        started = time.perf_counter()
        snapshot: Snapshot | None = None
        decision: Decision | None = None
        outcome = Outcome()
        try:
            mirror = self.mirrors.fresh(repo)
            tips = notes_tips(mirror)
            snapshot = reader.read(strategy, repo, mirror)
            self._let_go(repo, plugin, self.sha_index.track(key, _tracked_shas(snapshot)))
            decision = decide(snapshot)
            outcome.requeue_after = decision.requeue_after
            executor.run(snapshot, repo, mirror, decision.actions, outcome)
            if outcome.recorded:
                snapshot = with_recorded(snapshot, outcome)
                if any(v.state is not EnvState.UP_TO_DATE for v in decision.environments):
                    outcome.requeue(0.0)  # a soak or a restore point may wait on the record
            for due in (
                self.probes.plan(snapshot, repo, plugin, self.status_cache),
                self.review_reads.retry_in(snapshot),
            ):
                if due is not None:
                    outcome.requeue(due)
        except Exception as exc:
            # Logged once, by the worker that decides the retry; shown here in the view.
            RECONCILE_TOTAL.labels("error").inc()
            if self.settled is not None:
                self.settled.forget(key)
            with self._lock:
                last = self.views.get(key)
            failed = outcome.failed_environment
            shown = with_deferred(decision, outcome) if decision is not None else None
            outage = isinstance(exc, ScmOutage)
            self._remember(key, failed_view(last, snapshot, shown, str(exc), failed, outage))
            raise
        finally:
            RECONCILE_DURATION.observe(time.perf_counter() - started)
        RECONCILE_TOTAL.labels("success").inc()
        if self.settled is not None:
            idle = outcome.requeue_after is None and all(
                isinstance(a, RecordHealthy) for a in decision.actions
            )
            self.settled.observe(key, snapshot, decision, notes=tips, idle=idle)
        shown = with_deferred(decision, outcome)
        kept = StrategyView(
            kept_snapshot(with_written(snapshot, outcome)), kept_decision(shown), None, utcnow()
        )
        self._remember(key, kept)
        log.debug(
            "reconciled",
            extra={
                "strategy": key,
                "actions": [a.kind for a in decision.actions],
                "duration_ms": round((time.perf_counter() - started) * 1000, 1),
            },
        )
        return outcome

    def view(self, key: str) -> StrategyView | None:
        """The last reconcile of one strategy (any thread)."""
        with self._lock:
            return self.views.get(key)

    def all_views(self) -> dict[str, StrategyView]:
        """A copy of every strategy's last reconcile, taken under the lock: workers add
        views while the API reads them."""
        with self._lock:
            return dict(self.views)

    def preview(self, key: str) -> StrategyView:
        """Read and decide without acting (``promoter status --config``)."""
        if self.config.strategy(key) is None:
            raise KeyError(key)
        try:
            snapshot, decision = self.read_and_decide(key)
        except Exception as exc:
            return StrategyView(None, None, str(exc), utcnow())
        return StrategyView(kept_snapshot(snapshot), kept_decision(decision), None, utcnow())

    def read_and_decide(self, key: str) -> tuple[Snapshot, Decision]:
        """The snapshot read now and the decision on it, without acting (``KeyError``: no
        such strategy)."""
        strategy = self.config.strategy(key)
        if strategy is None:
            raise KeyError(key)
        repo = self.config.repository(strategy.repository)
        reader = self.reader(key, self.plugin_for(repo))
        snapshot = reader.read(strategy, repo, self.mirrors.fresh(repo))
        return snapshot, decide(snapshot)

    def reader(self, key: str, plugin: ScmPlugin) -> SnapshotReader:
        return SnapshotReader(
            plugin,
            self.status_cache,
            self.ledger,
            self.pr_cache,
            self._status_url(key),
            clock=self.clock,
            lineage=self.lineage,
            conflicts=self.conflicts,
            shapes=self.shapes,
            global_freezes=tuple(self.config.freezes),
            signatures=self.signatures,
            review_reads=self.review_reads,
            queue_detection=self.queue_detection,
        )

    def _status_url(self, key: str) -> str:
        return f"{self.status_url.rstrip('/')}/strategies/{key}" if self.status_url else ""

    def forget(self, keys: Iterable[str]) -> None:
        """Let go of what the reconciles of ``keys`` kept (their views, what they read
        and found settled, the commits they tracked and those commits' statuses):
        another replica works on them now. A reconcile of one of them still running lets
        go of what it kept when it ends."""
        for key in keys:
            with self._lock:
                self.views.pop(key, None)
                self._let_go_of[key] = self._let_go_of.get(key, 0) + 1
            if self.settled is not None:
                self.settled.forget(key)
            strategy = self.config.strategy(key)
            if strategy is None:
                continue
            repo = self.config.repository(strategy.repository)
            self._let_go(repo, self.plugin_for(repo), self.sha_index.forget(key))

    def _let_go(self, repo: Repository, plugin: ScmPlugin, released: set[str]) -> None:
        """What is kept about commits no strategy tracks any more: their statuses, and what
        the plugin cached to read them (``ForgottenCommits``)."""
        for sha in released:
            self.status_cache.release(repo.name, sha)
        if released and isinstance(plugin, ForgottenCommits):
            plugin.forget_commits(repo=repo, shas=released)

    def _remember(self, key: str, view: StrategyView) -> None:
        with self._lock:
            self.views[key] = view


def failed_view(
    last: StrategyView | None,
    snapshot: Snapshot | None,
    decision: Decision | None,
    error: str,
    environment: str | None,
    outage: bool = False,
) -> StrategyView:
    """What a failed reconcile shows: the error as the reason of the environment it
    happened in (every environment when it happened before deciding), never the
    verdicts of an earlier reconcile as if they still held; an outage the SCM reported
    holds them ``blocked``, not in ``error``."""
    kept = kept_snapshot(snapshot) if snapshot is not None else last.snapshot if last else None
    shown = kept_decision(decision) if decision is not None else last.decision if last else None
    state = EnvState.BLOCKED if outage else EnvState.ERROR
    if shown is not None:
        verdicts = tuple(
            replace(v, state=state, reason=error)
            if environment is None or v.branch == environment
            else v
            for v in shown.environments
        )
        shown = replace(shown, environments=verdicts)
    return StrategyView(kept, shown, error, utcnow(), outage=outage)


def with_deferred(decision: Decision, outcome: Outcome) -> Decision:
    """The verdicts with the merges the executor deferred: such an environment is blocked,
    and its reason is the deferral's (a gate the SCM no longer reports success)."""
    if not outcome.deferred:
        return decision
    verdicts = tuple(
        v.model_copy(update={"state": EnvState.BLOCKED, "reason": outcome.deferred[v.branch]})
        if v.branch in outcome.deferred
        else v
        for v in decision.environments
    )
    return decision.model_copy(update={"environments": verdicts})


def with_written(snapshot: Snapshot, outcome: Outcome) -> Snapshot:
    """The snapshot as the promoter's own status writes left it (what the view shows)."""
    if not outcome.written:
        return snapshot
    envs = []
    for env in snapshot.environments:
        commits = {}
        for name in ("active", "proposed"):
            commit = getattr(env, name)
            mine = [w.status for w in outcome.written if commit and w.sha == commit.hydrated_sha]
            if commit is not None and mine:
                keys = {s.key for s in mine}
                kept = tuple(s for s in commit.statuses if s.key not in keys)
                commits[name] = commit.model_copy(update={"statuses": (*kept, *mine)})
        envs.append(env.model_copy(update=commits) if commits else env)
    return snapshot.model_copy(update={"environments": tuple(envs)})


def with_recorded(snapshot: Snapshot, outcome: Outcome) -> Snapshot:
    """The snapshot with the healthy records just made, each ledger as it was written."""
    envs = tuple(
        env.model_copy(update={"ledger": outcome.recorded[env.branch]})
        if env.branch in outcome.recorded
        else env
        for env in snapshot.environments
    )
    return snapshot.model_copy(update={"environments": envs})


def _tracked_shas(snapshot: Snapshot) -> set[str]:
    return {
        commit.hydrated_sha
        for env in snapshot.environments
        for commit in (env.active, env.proposed)
        if commit is not None
    }
