"""Reads one strategy's snapshot: git (through the mirror), the SCM and the caches.

All the I/O of a reconcile's read phase is here; the engine gets the result.
A hydrated commit without metadata marks its environment, never the strategy.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from promoter.config import PromotionStrategy, Repository
from promoter.config.freezes import GlobalFreezeWindow
from promoter.daemon.reading.approvals import read_approvals
from promoter.daemon.reading.commit_facts import MergeConflicts, ancestry, proposed_in_active
from promoter.daemon.reading.deployment_target import deployment_target
from promoter.daemon.reading.freezes import configured, dated_periods, manual_periods
from promoter.daemon.reading.queue_detection import QueueDetection
from promoter.daemon.reading.review_reads import ReviewReads
from promoter.daemon.reading.shapes import EnvironmentShape, Shapes
from promoter.daemon.reading.signature_check import SignatureReading
from promoter.engine import CommitState, EnvironmentSnapshot, EnvLedger, FreezePeriod, Snapshot
from promoter.errors import MetadataMissing
from promoter.git import GitMirror
from promoter.git.lineage import Lineage
from promoter.models import CommitStatus, DryCommit, PullRequest, utcnow
from promoter.state.ledger import GitLedger, LedgerUnreadable
from promoter.state.pulls import MISSING, PullRequestCache
from promoter.state.statuses import StatusCache
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.reader")

MADE_BY_MERGE = frozenset({"merge", "lineage"})
"""Where the lineage found the dry SHA of a commit the hydrator did not write."""


@dataclass
class SnapshotReader:
    plugin: ScmPlugin
    status_cache: StatusCache
    ledger: GitLedger
    pr_cache: PullRequestCache
    status_url: str = ""
    clock: Callable[[], datetime] = utcnow
    """The snapshot's ``now``: the engine's only clock (a test may move it)."""
    lineage: Lineage = field(default_factory=Lineage)
    """Dry SHAs of commits that merges made (``promoter.git.lineage``)."""
    conflicts: MergeConflicts = field(default_factory=lambda: MergeConflicts())
    shapes: Shapes = field(default_factory=Shapes)
    """What each strategy's configuration gives its snapshots (``shapes``)."""
    global_freezes: tuple[GlobalFreezeWindow, ...] = ()
    """The configuration's top-level freeze dates (``Config.freezes``)."""
    signatures: SignatureReading = field(default_factory=SignatureReading)
    """Verified signatures of dry commits (long-lived: the reconciler's)."""
    review_reads: ReviewReads = field(default_factory=ReviewReads)
    """Approval gates' reads, bounded and never raising (``review_reads``)."""
    queue_detection: QueueDetection = field(default_factory=QueueDetection)
    """Which branches merge through the SCM's queue, when ``mergeQueue`` is unset."""

    def statuses(
        self, repo: Repository, sha: str, *, fresh: bool = False, any_age: bool = False
    ) -> list[CommitStatus]:
        """A SHA's statuses from the cache when complete and fresh (``any_age``: however
        old), else from the SCM."""
        if not fresh:
            cached = self.status_cache.get(repo.name, sha, any_age=any_age)
            if cached is not None:
                return cached
        statuses = self.plugin.get_commit_statuses(repo=repo, sha=sha)
        self.status_cache.store(repo.name, sha, statuses)
        return self.status_cache.get(repo.name, sha) or statuses

    def gates(self, repo: Repository, sha: str, keys: tuple[str, ...]) -> dict[str, CommitStatus]:
        """Fresh from the SCM, the statuses of ``keys`` only (the re-read before a merge)."""
        if not keys:
            return {}
        found = self.plugin.get_commit_statuses(repo=repo, sha=sha, keys=keys)
        for status in found:
            self.status_cache.put(repo.name, sha, status)
        return {s.key: s for s in found if s.key in keys}

    def _commit(
        self,
        repo: Repository,
        mirror: GitMirror,
        branch: str,
        proposed: str | None = None,
        running: CommitState | None = None,
    ) -> CommitState | None:
        """A branch tip; an active one (``proposed``: its proposed branch) may be a merge's.

        ``running``: the active commit, for a proposed one. When both render the same dry
        commit, nothing is to be promoted and the proposed commit's statuses gate nothing:
        cached ones are taken at any age (a merged proposal is not read again while the
        environments after it wait)."""
        sha = mirror.branch_sha(branch)
        if sha is None:
            return None
        dry_sha: str | None = None
        error: str | None = None
        by_merge = False
        tip = mirror.branch_sha(proposed) if proposed else None
        try:
            found = self.lineage.metadata(mirror, sha, proposed_tip=tip)
            dry_sha = found.dry_sha
            by_merge = proposed is None and found.source in MADE_BY_MERGE
        except MetadataMissing as exc:
            error = str(exc)
        merged = running is not None and dry_sha is not None and dry_sha == running.dry_sha
        return CommitState(
            hydrated_sha=sha,
            tree_sha=mirror.tree_sha(sha),
            dry_sha=dry_sha,
            metadata_error=error,
            statuses=tuple(self.statuses(repo, sha, any_age=merged)),
            by_merge=by_merge,
        )

    def read(self, strategy: PromotionStrategy, repo: Repository, mirror: GitMirror) -> Snapshot:
        wide: dict[tuple[str, str], EnvLedger] = {}  # the freeze keys all environments read
        envs = [
            self._environment(strategy, repo, mirror, shape, wide)
            for shape in self.shapes.of(strategy)
        ]
        return Snapshot(
            strategy=strategy.name,
            repository=repo.name,
            dry_branch=strategy.dry_branch,
            environments=tuple(envs),
            ancestry=ancestry(mirror, envs),
            status_url=self.status_url,
            folded_keys=self.plugin.folded_gate_keys,
            labels=tuple(strategy.labels),
            unheld_labels=self.pr_cache.unheld.current(repo.name),
            now=self.clock(),
        )

    def _environment(
        self,
        strategy: PromotionStrategy,
        repo: Repository,
        mirror: GitMirror,
        shape: EnvironmentShape,
        wide: dict[tuple[str, str], EnvLedger],
    ) -> EnvironmentSnapshot:
        """One environment's part of the snapshot: its branches, PR, ledger and freezes, then
        one part per SCM feature, each filled by its own function (``approvals``,
        ``signature_check``, ``queue_detection``, ``deployment_target``).
        ``wide``: the ledgers read for every environment of the snapshot, kept by key."""
        env = shape.config
        proposed_branch = shape.proposed_branch
        active = self._commit(repo, mirror, env.branch, proposed_branch)
        proposed = self._commit(repo, mirror, proposed_branch, running=active)
        error = None if active is not None else f"branch {env.branch} does not exist"
        pull_request = None
        changelog: tuple[DryCommit, ...] = ()
        if active is not None and proposed is not None:
            pull_request = self.open_pull_request(
                repo, proposed_branch, env.branch, proposed.hydrated_sha
            )
            if proposed.dry_sha and proposed.dry_sha != active.dry_sha:
                changelog = tuple(self._changelog(mirror, active.dry_sha, proposed.dry_sha))
        ledger, ledger_error = self._ledger(mirror, strategy.name, env.branch)
        error = error or ledger_error
        freezes, freeze_error = self._freezes(strategy, mirror, env.branch, ledger, wide)
        error = error or freeze_error
        gates = shape.gates
        approvals = read_approvals(
            self.plugin,
            self.review_reads,
            repo,
            mirror,
            env,
            gates,
            pull_request,
            active,
            proposed,
            ledger,
        )
        signatures = self.signatures.read(
            self.plugin,
            repo,
            mirror,
            gates,
            active.dry_sha if active else None,
            proposed.dry_sha if active and proposed else None,
        )
        queueing = self.queue_detection.read(self.plugin, repo, env, pull_request, ledger)
        lacking = self.queue_detection.lacking(repo, env.branch) if queueing.on else None
        if lacking and active and proposed and proposed.dry_sha != active.dry_sha:
            error = error or lacking  # this environment cannot promote here; others can
        return EnvironmentSnapshot(
            branch=env.branch,
            proposed_branch=proposed_branch,
            auto_merge=shape.auto_merge,
            active_keys=shape.active_keys,
            proposed_keys=shape.proposed_keys,
            active=active,
            proposed=proposed,
            pull_request=pull_request,
            changelog=changelog,
            ledger=ledger,
            active_since=mirror.commit_time(active.hydrated_sha) if active else None,
            auto_revert=shape.auto_revert,
            revert_pull_request=self._revert_pull_request(repo, mirror, env.branch, active, ledger),
            proposed_in_active=proposed_in_active(mirror, active, proposed),
            merge_conflicts=self.conflicts.check(mirror, active, proposed),
            error=error,
            gates=gates,
            upstreams=shape.upstreams,
            rollout=shape.rollout,
            freezes=freezes,
            approvals=approvals,
            signatures=signatures,
            queueing=queueing,
            deployment=deployment_target(self.plugin, strategy, env),
        )

    def _ledger(
        self, mirror: GitMirror, strategy: str, branch: str
    ) -> tuple[EnvLedger, str | None]:
        """The environment's ledger; an unreadable one blocks it (fail closed), with why."""
        try:
            return self.ledger.read(mirror, strategy, branch), None
        except LedgerUnreadable as exc:
            return EnvLedger(), f"the ledger of {branch} cannot be read: {exc}"

    def _freezes(
        self,
        strategy: PromotionStrategy,
        mirror: GitMirror,
        branch: str,
        ledger: EnvLedger,
        wide: dict[tuple[str, str], EnvLedger],
    ) -> tuple[tuple[FreezePeriod, ...], str | None]:
        """The freezes covering ``branch``: people's (ledger notes), and the configuration's
        dates not over yet. A note that cannot be read blocks the environment (fail closed).
        The strategy's and everything's notes are read once per snapshot (``wide``)."""

        def read(strategy_key: str, environment_key: str) -> EnvLedger:
            key = (strategy_key, environment_key)
            found = wide.get(key)
            if found is None:
                found = wide[key] = self.ledger.read(mirror, strategy_key, environment_key)
            return found

        now = self.clock()
        try:
            found = manual_periods(read, strategy.name, branch, ledger)
        except LedgerUnreadable as exc:
            return (), f"the freezes of {branch} cannot be read: {exc}"
        for windows, scope in configured(strategy, self.global_freezes):
            found += dated_periods([windows], scope, branch, now)
        return tuple(found), None

    def open_pull_request(
        self, repo: Repository, head: str, base: str, tip: str
    ) -> PullRequest | None:
        """The open PR for head/base: from the cache unless unknown, old or behind ``tip``."""
        key = (repo.name, head, base)
        cached = self.pr_cache.get(key)
        if cached is not MISSING and (
            cached is None or (isinstance(cached, PullRequest) and cached.head_sha == tip)
        ):
            return cached if isinstance(cached, PullRequest) else None
        found = self.plugin.find_open_pull_request(repo=repo, head=head, base=base)
        self.pr_cache.put(key, found)
        return found

    def _revert_pull_request(
        self,
        repo: Repository,
        mirror: GitMirror,
        branch: str,
        active: CommitState | None,
        ledger: EnvLedger,
    ) -> PullRequest | None:
        """The open PR of the latest revert, while that revert has not landed."""
        latest = ledger.reverts[-1] if ledger.reverts else None
        if latest is None or active is None:
            return None
        if mirror.is_ancestor(latest.revert_sha, active.hydrated_sha):
            return None
        return self.open_pull_request(repo, latest.branch, branch, latest.revert_sha)

    @staticmethod
    def _changelog(mirror: GitMirror, since: str | None, until: str) -> list[DryCommit]:
        try:
            return mirror.log(since, until, limit=50)
        except Exception:  # a changelog is a courtesy: never let it block a promotion
            log.warning("changelog unavailable", extra={"since": since, "until": until})
            return []
