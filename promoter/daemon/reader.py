"""Reads one strategy's snapshot: git (through the mirror), the SCM and the caches.

All the I/O of a reconcile's read phase is here; the engine gets the result.
A hydrated commit without metadata marks its environment, never the strategy.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from promoter.config import GateSpec, PromotionStrategy, Repository
from promoter.daemon.shapes import EnvironmentShape, Shapes
from promoter.engine import CommitState, EnvironmentSnapshot, EnvLedger, Snapshot
from promoter.errors import MetadataMissing
from promoter.git import GitMirror
from promoter.git.caches import remember
from promoter.git.lineage import Lineage
from promoter.models import CommitStatus, DryCommit, PullRequest, Review, utcnow
from promoter.state.ledger import GitLedger, LedgerUnreadable
from promoter.state.pulls import MISSING, PullRequestCache
from promoter.state.statuses import StatusCache
from scm_plugins.protocol import Reviews, ScmPlugin

log = logging.getLogger("promoter.reader")


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
    """What each strategy's configuration gives its snapshots (``promoter.daemon.shapes``)."""

    def statuses(self, repo: Repository, sha: str, *, fresh: bool = False) -> list[CommitStatus]:
        """A SHA's statuses from the cache when complete and fresh, else from the SCM."""
        if not fresh:
            cached = self.status_cache.get(repo.name, sha)
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
        self, repo: Repository, mirror: GitMirror, branch: str, proposed: str | None = None
    ) -> CommitState | None:
        """A branch tip; an active one (``proposed``: its proposed branch) may be a merge's."""
        sha = mirror.branch_sha(branch)
        if sha is None:
            return None
        dry_sha: str | None = None
        error: str | None = None
        tip = mirror.branch_sha(proposed) if proposed else None
        try:
            dry_sha = self.lineage.metadata(mirror, sha, proposed_tip=tip).dry_sha
        except MetadataMissing as exc:
            error = str(exc)
        return CommitState(
            hydrated_sha=sha,
            tree_sha=mirror.tree_sha(sha),
            dry_sha=dry_sha,
            metadata_error=error,
            statuses=tuple(self.statuses(repo, sha)),
        )

    def read(self, strategy: PromotionStrategy, repo: Repository, mirror: GitMirror) -> Snapshot:
        envs = [
            self._environment(strategy, repo, mirror, shape) for shape in self.shapes.of(strategy)
        ]
        return Snapshot(
            strategy=strategy.name,
            repository=repo.name,
            dry_branch=strategy.dry_branch,
            environments=tuple(envs),
            ancestry=self._ancestry(mirror, envs),
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
        env: EnvironmentShape,
    ) -> EnvironmentSnapshot:
        """One environment's part of the snapshot: its branches, PR, ledger and reviews."""
        proposed_branch = env.proposed_branch
        active = self._commit(repo, mirror, env.branch, proposed_branch)
        proposed = self._commit(repo, mirror, proposed_branch)
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
        reviews, reviews_error = self._reviews(repo, env.gates, pull_request)
        return EnvironmentSnapshot(
            branch=env.branch,
            proposed_branch=proposed_branch,
            auto_merge=env.auto_merge,
            active_keys=env.active_keys,
            proposed_keys=env.proposed_keys,
            active=active,
            proposed=proposed,
            pull_request=pull_request,
            changelog=changelog,
            ledger=ledger,
            active_since=mirror.commit_time(active.hydrated_sha) if active else None,
            auto_revert=env.auto_revert,
            revert_pull_request=self._revert_pull_request(repo, mirror, env.branch, active, ledger),
            proposed_in_active=_contains(mirror, active, proposed),
            merge_conflicts=self.conflicts.check(mirror, active, proposed),
            error=error,
            gates=env.gates,
            reviews=reviews,
            reviews_error=reviews_error,
            upstreams=env.upstreams,
            rollout=env.rollout,
        )

    def _ledger(
        self, mirror: GitMirror, strategy: str, branch: str
    ) -> tuple[EnvLedger, str | None]:
        """The environment's ledger; an unreadable one blocks it (fail closed), with why."""
        try:
            return self.ledger.read(mirror, strategy, branch), None
        except LedgerUnreadable as exc:
            return EnvLedger(), f"the ledger of {branch} cannot be read: {exc}"

    def _reviews(
        self, repo: Repository, gates: tuple[GateSpec, ...], pr: PullRequest | None
    ) -> tuple[tuple[Review, ...] | None, str | None]:
        """The open PR's reviews, read only when an approval gate needs them."""
        wanted = [g.approval for g in gates if g.approval is not None]
        if not wanted or pr is None:
            return None, None
        if not isinstance(self.plugin, Reviews):
            return None, f"approval: the {self.plugin.name} SCM plugin cannot read reviews"
        teams = sorted({team for approval in wanted for team in approval.teams})
        found = self.plugin.get_reviews(repo=repo, number=pr.number, teams=teams)
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

    @staticmethod
    def _ancestry(mirror: GitMirror, envs: list[EnvironmentSnapshot]) -> frozenset[tuple[str, str]]:
        """``(ancestor, descendant)`` pairs among the dry SHAs the rules compare.

        Every pair of the environments' active and proposed dry SHAs, plus each
        environment's active against its healthy records (restore points) and its
        proposed against its holds (lifted by a descendant). Answers are cached by
        the mirror, so a pair costs a git call once.
        """
        current = sorted(
            {
                commit.dry_sha
                for env in envs
                for commit in (env.active, env.proposed)
                if commit is not None and commit.dry_sha
            }
        )
        pairs = set(itertools.permutations(current, 2))
        for env in envs:
            if env.active is not None and env.active.dry_sha:
                pairs.update((r.dry_sha, env.active.dry_sha) for r in env.ledger.healthy)
            if env.proposed is not None and env.proposed.dry_sha:
                pairs.update((h.dry_sha, env.proposed.dry_sha) for h in env.ledger.holds)
        return frozenset((a, d) for a, d in pairs if a != d and mirror.is_ancestor(a, d))


def _contains(mirror: GitMirror, active: CommitState | None, proposed: CommitState | None) -> bool:
    """The proposed hydrated commit is already in the active branch's history."""
    if active is None or proposed is None or active.hydrated_sha == proposed.hydrated_sha:
        return False
    return mirror.is_ancestor(proposed.hydrated_sha, active.hydrated_sha)


@dataclass
class MergeConflicts:
    """Whether a three-way merge of an active tip into a proposed tip conflicts, cached."""

    _known: dict[tuple[str, str, str], bool] = field(default_factory=dict)

    def check(
        self, mirror: GitMirror, active: CommitState | None, proposed: CommitState | None
    ) -> bool:
        if active is None or proposed is None or active.tree_sha == proposed.tree_sha:
            return False
        key = (mirror.name, active.hydrated_sha, proposed.hydrated_sha)
        known = self._known.get(key)
        if known is None:
            if mirror.is_ancestor(active.hydrated_sha, proposed.hydrated_sha) or (
                mirror.is_ancestor(proposed.hydrated_sha, active.hydrated_sha)
            ):
                known = False  # a fast-forward, or nothing to merge
            else:
                known = not mirror.merge_tree(proposed.hydrated_sha, active.hydrated_sha)[0]
            remember(self._known, key, known, 1 << 15)
        return known
