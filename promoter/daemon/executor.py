"""Carries out the engine's actions through the SCM plugin, the ledger and the caches.

Every action is logged with a fixed message and fields, and reported to observers
(the demo prints them). A merge re-reads the required gates from the SCM first,
because the cache may be stale (DESIGN rule 6).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import assert_never

from promoter.config import Repository
from promoter.daemon.mergeable import merge_active_into_proposed
from promoter.daemon.merges import Merger, UnconfirmedMerges, count_settled
from promoter.daemon.reader import SnapshotReader
from promoter.daemon.records import LedgerAction, record_of
from promoter.daemon.revert_writer import RevertWriter
from promoter.engine.actions import (
    REVERT_LABEL,
    Action,
    Announce,
    ApproveChange,
    ApprovePullRequest,
    ClosePullRequest,
    CommentPullRequest,
    HoldDryCommit,
    MergeActiveIntoProposed,
    MergePullRequest,
    OpenPullRequest,
    OpenRevert,
    PauseEnvironment,
    PinEnvironment,
    RecordHealthy,
    RecordOverride,
    ReleaseHold,
    RequeueAfter,
    ResumeEnvironment,
    SetCommitStatus,
    UpdatePullRequest,
)
from promoter.engine.ledger_state import (
    EnvLedger,
    Hold,
    Revert,
)
from promoter.engine.snapshot import EnvironmentSnapshot, Snapshot
from promoter.errors import PermanentError, ScmConflict, ScmNotFound
from promoter.git import GitMirror
from promoter.metrics import HOLDS, REVERTS_TOTAL
from promoter.models import PullRequest
from promoter.state import GitLedger, PullRequestCache, StatusCache
from scm_plugins.protocol import Approvals, ScmPlugin

log = logging.getLogger("promoter.actions")


@dataclass(frozen=True)
class ActionEvent:
    """What happened, for observers: ``kind`` is opened/updated/closed/merged/status/healthy."""

    kind: str
    strategy: str
    environment: str
    message: str
    sha: str = ""
    pr: int | None = None


Observer = Callable[[ActionEvent], None]


@dataclass
class Outcome:
    requeue_after: float | None = None
    merged: list[str] = field(default_factory=list)
    written: list[SetCommitStatus] = field(default_factory=list)
    """Statuses written: the view served shows them at once, not after the next read."""
    recorded: list[str] = field(default_factory=list)
    """Environments recorded healthy: the view shows the record at once; the reconciler
    runs the strategy again only if something may wait on it."""

    def requeue(self, seconds: float) -> None:
        self.requeue_after = (
            seconds if self.requeue_after is None else min(self.requeue_after, seconds)
        )


@dataclass
class Executor:
    plugin: ScmPlugin
    reader: SnapshotReader
    """Reads gates afresh before a merge."""
    status_cache: StatusCache
    pr_cache: PullRequestCache
    ledger: GitLedger
    observers: list[Observer]
    on_merged: Callable[[Repository], None]
    unconfirmed: UnconfirmedMerges = field(default_factory=UnconfirmedMerges)
    """Merges whose answer was lost (shared by every reconcile of the daemon)."""
    failed_environment: str | None = field(default=None, init=False)
    """The environment whose action failed in the last run, for the view to show it there."""

    def run(
        self,
        snapshot: Snapshot,
        repo: Repository,
        mirror: GitMirror,
        actions: tuple[Action, ...],
    ) -> Outcome:
        self._mirror = mirror
        count_settled(snapshot, mirror, self.unconfirmed)
        self.failed_environment = None
        outcome = Outcome()
        refused: ScmConflict | ScmNotFound | None = None
        for action in actions:
            if isinstance(action, RequeueAfter):
                outcome.requeue(action.seconds)
                continue
            env = snapshot.environments[action.environment]
            key = _pr_key(repo, env, action)
            if isinstance(action, RecordOverride) and env.branch not in outcome.merged:
                # A break-glass promotion is recorded only when its merge happened.
                log.warning(
                    "override not recorded: the merge did not happen",
                    extra={"strategy": snapshot.strategy, "environment": env.branch},
                )
                continue
            try:
                self._one(snapshot, repo, action, outcome)
            except (ScmConflict, ScmNotFound) as exc:
                self.failed_environment = self.failed_environment or env.branch
                # What we knew about the PR was wrong: forget it and read again.
                self.pr_cache.forget(key)
                log.info(
                    "action refused, will re-read",
                    extra={
                        "strategy": snapshot.strategy,
                        "environment": env.branch,
                        "action": action.kind,
                        "reason": str(exc),
                    },
                )
                refused = refused or exc
            except Exception:
                self.failed_environment = env.branch
                raise
        if refused is not None:
            raise refused  # the queue retries with its backoff: quick once, slower if it repeats
        return outcome

    def _one(self, snapshot: Snapshot, repo: Repository, action: Action, outcome: Outcome) -> None:
        """Carry out one action; every kind of action has its case (checked by mypy)."""
        match action:
            case RequeueAfter():
                outcome.requeue(action.seconds)
            case SetCommitStatus():
                self._status(snapshot, repo, action)
                outcome.written.append(action)
            case OpenPullRequest() | UpdatePullRequest() | ClosePullRequest():
                self._pull_request(snapshot, repo, action)
                outcome.requeue(0.0)
            case CommentPullRequest():
                self.plugin.comment_pull_request(repo=repo, number=action.number, body=action.body)
            case ApprovePullRequest():
                self._approve(snapshot, repo, action)
                outcome.requeue(0.0)
            case MergePullRequest():
                self._merge(snapshot, repo, action, outcome)
            case OpenRevert():
                self._revert(snapshot, repo, action, outcome)
            case MergeActiveIntoProposed():
                sha = merge_active_into_proposed(self._mirror, action, strategy=snapshot.strategy)
                if sha is not None:
                    what = f"{action.active_branch} merged into {action.proposed_branch}"
                    self._emit("mergeable", snapshot, action.active_branch, what, sha)
                self.on_merged(repo)  # the proposed branch moved, or someone else moved it
                outcome.requeue(0.0)
            case RecordHealthy():
                self._record(snapshot, action)
                outcome.recorded.append(snapshot.environments[action.environment].branch)
            case (
                ReleaseHold()
                | HoldDryCommit()
                | ResumeEnvironment()
                | PinEnvironment()
                | ApproveChange()
                | Announce()
                | PauseEnvironment()
                | RecordOverride()
            ):
                self._record(snapshot, action)
                outcome.requeue(0.0)  # the ledger changed: show it at once
            case _:
                assert_never(action)

    def _status(self, snapshot: Snapshot, repo: Repository, action: SetCommitStatus) -> None:
        env = snapshot.environments[action.environment]
        status = action.status
        self.plugin.set_commit_status(repo=repo, sha=action.sha, status=status)
        self.status_cache.put(repo.name, action.sha, status)
        self._emit(
            "status", snapshot, env.branch, f"{status.key}: {status.description}", action.sha
        )

    def _pull_request(
        self,
        snapshot: Snapshot,
        repo: Repository,
        action: OpenPullRequest | UpdatePullRequest | ClosePullRequest,
    ) -> None:
        env = snapshot.environments[action.environment]
        key = _pr_key(repo, env, action)
        fields = {"strategy": snapshot.strategy, "environment": env.branch}
        match action:
            case OpenPullRequest():
                pr = self.plugin.open_pull_request(
                    repo=repo,
                    head=action.head,
                    base=action.base,
                    title=action.title,
                    body=action.body,
                    labels=action.labels,
                )
                self.pr_cache.put(key, pr)
                self._kept(snapshot, env.branch, action.labels, pr)
                log.info("pull request opened", extra={**fields, "pr": pr.number})
                self._emit("opened", snapshot, env.branch, action.title, pr.head_sha, pr.number)
            case UpdatePullRequest():
                pr = self.plugin.update_pull_request(
                    repo=repo,
                    number=action.number,
                    title=action.title,
                    body=action.body,
                    labels=action.labels,
                )
                self.pr_cache.put(key, pr)
                self._kept(snapshot, env.branch, action.labels, pr)
                log.info("pull request updated", extra={**fields, "pr": action.number})
                self._emit("updated", snapshot, env.branch, action.title, pr=action.number)
            case ClosePullRequest():
                current = self.plugin.find_open_pull_request(
                    repo=repo, head=env.proposed_branch, base=env.branch
                )
                if current is None or current.number != action.number:
                    # A person merged or closed it meanwhile: leave it alone.
                    self.pr_cache.put(key, current)
                    log.info("pull request no longer open, left alone", extra=fields)
                    return
                self.plugin.close_pull_request(
                    repo=repo, number=action.number, comment=action.comment
                )
                self.pr_cache.put(key, None)
                log.info("pull request closed", extra={**fields, "pr": action.number})
                self._emit("closed", snapshot, env.branch, action.comment, pr=action.number)
            case _:
                assert_never(action)

    def _kept(
        self, snapshot: Snapshot, branch: str, wanted: tuple[str, ...], pr: PullRequest
    ) -> None:
        """Labels the SCM did not keep are set aside (``UnheldLabels``) and reported once."""
        refused = self.pr_cache.unheld.observe(snapshot.repository, wanted, pr.labels)
        if refused:
            log.warning(
                "the SCM did not keep labels on a pull request; asking again later",
                extra={
                    "strategy": snapshot.strategy,
                    "environment": branch,
                    "pr": pr.number,
                    "labels": sorted(refused),
                    "retry_in": min(refused.values()),
                },
            )

    def _approve(self, snapshot: Snapshot, repo: Repository, action: ApprovePullRequest) -> None:
        if not isinstance(self.plugin, Approvals):
            raise PermanentError(
                f"the {self.plugin.name} SCM takes approvals in its own UI, not from promoter"
            )
        self.plugin.approve_pull_request(repo=repo, number=action.number, user=action.user)
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        log.info("pull request approved", extra={**fields, "user": action.user})
        self._emit("approved", snapshot, env.branch, f"approved by {action.user}", pr=action.number)

    def _record(self, snapshot: Snapshot, action: LedgerAction) -> None:
        """A ledger write; healthy records may reach git a moment later."""
        env = snapshot.environments[action.environment]
        record = record_of(action)
        self._ledger(snapshot, env.branch, record.change, durable=record.durable)
        if record.message:
            fields = {"strategy": snapshot.strategy, "environment": env.branch}
            log.log(record.level, record.message, extra={**fields, "sha": record.sha})
        if record.event:
            self._emit(record.event, snapshot, env.branch, record.text, record.sha)

    def _merge(
        self, snapshot: Snapshot, repo: Repository, action: MergePullRequest, outcome: Outcome
    ) -> None:
        env = snapshot.environments[action.environment]
        merger = Merger(
            self.plugin, self.reader.gates, self.pr_cache, self.unconfirmed, self.on_merged
        )
        merge_sha = merger.merge(snapshot, repo, action, _pr_key(repo, env, action))
        outcome.requeue(0.0)
        if merge_sha is None:
            return
        self._emit(
            "reverted" if action.purpose == "revert" else "merged",
            snapshot,
            env.branch,
            f"merged {action.dry_sha[:7]}",
            action.dry_sha,
            action.number,
        )
        outcome.merged.append(env.branch)

    def _revert(
        self, snapshot: Snapshot, repo: Repository, action: OpenRevert, outcome: Outcome
    ) -> None:
        index = action.environment
        env = snapshot.environments[index]
        branch, commit, pr = RevertWriter(self.plugin).write(repo, self._mirror, env, action)
        self.pr_cache.put((repo.name, branch, env.branch), pr)
        self._kept(snapshot, env.branch, (REVERT_LABEL,), pr)
        revert = Revert(
            bad_dry_sha=action.bad_dry_sha,
            bad_hydrated_sha=action.bad_hydrated_sha,
            restored_dry_sha=action.restore.dry_sha,
            restored_hydrated_sha=action.restore.hydrated_sha,
            reason=action.reason,
            trigger=action.trigger,
            opened_at=snapshot.now,
            branch=branch,
            revert_sha=commit,
            pr=pr.number,
            auto_merge=action.auto_merge,
        )
        hold = Hold(
            dry_sha=action.bad_dry_sha,
            reason=f"reverted out of {env.branch}: {action.reason}",
            since=snapshot.now,
            source="revert",
        )
        holders = action.hold_in or tuple(range(index, len(snapshot.environments)))
        changes: dict[str, Callable[[EnvLedger], EnvLedger]] = {
            snapshot.environments[p].branch: lambda led: led.with_hold(hold)
            for p in holders
            if p != index
        }
        changes[env.branch] = lambda led: led.with_revert(revert).with_hold(hold)
        # One notes commit, one push: a kill leaves the revert with all its holds, or none.
        written = self.ledger.update_many(self._mirror, snapshot.strategy, changes)
        for branch, ledger in written.items():
            HOLDS.labels(snapshot.strategy, branch).set(len(ledger.holds))
        REVERTS_TOTAL.labels(snapshot.strategy, env.branch, action.trigger).inc()
        log.warning(
            "revert opened",
            extra={
                "strategy": snapshot.strategy,
                "environment": env.branch,
                "pr": pr.number,
                "sha": action.bad_dry_sha,
                "restore": action.restore.dry_sha,
                "reason": action.reason,
            },
        )
        self._emit("revert", snapshot, env.branch, action.reason, action.bad_dry_sha, pr.number)
        outcome.requeue(0.0)

    def _ledger(
        self,
        snapshot: Snapshot,
        branch: str,
        change: Callable[[EnvLedger], EnvLedger],
        *,
        durable: bool = True,
    ) -> None:
        """Write the ledger; healthy records may be pushed a moment later (``durable``)."""
        ledger = self.ledger.update(
            self._mirror, snapshot.strategy, branch, change, durable=durable
        )
        HOLDS.labels(snapshot.strategy, branch).set(len(ledger.holds))

    def _emit(
        self,
        kind: str,
        snapshot: Snapshot,
        environment: str,
        message: str,
        sha: str = "",
        pr: int | None = None,
    ) -> None:
        event = ActionEvent(kind, snapshot.strategy, environment, message, sha, pr)
        for observer in self.observers:
            try:
                observer(event)
            except Exception:
                log.exception("observer failed", extra={"kind": kind})


def _pr_key(repo: Repository, env: EnvironmentSnapshot, action: Action) -> tuple[str, str, str]:
    """The PR cache key of the pull request an action is about (a revert PR has its own head)."""
    revert = env.revert_pull_request
    if isinstance(action, MergePullRequest) and action.purpose == "revert" and revert is not None:
        return (repo.name, revert.head_branch, env.branch)
    return (repo.name, env.proposed_branch, env.branch)
