"""Carries out the engine's actions through the SCM plugin, the ledger and the caches.

Every action is logged with a fixed message and fields, and reported to observers (the
demo prints them). Pull requests are opened, updated and closed by ``pull_requests``;
a merge re-reads the required gates from the SCM first (``merges``: the cache may be
stale, DESIGN rule 6); what a ledger action writes is the engine's
(``engine.ledger_changes``). The executor keeps nothing between runs: what a run did,
and where it failed, is in its ``Outcome``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import assert_never

from promoter.config import Repository
from promoter.daemon.acting.deployments import DeploymentReporter
from promoter.daemon.acting.events import Observer, tell
from promoter.daemon.acting.mergeable import merge_active_into_proposed
from promoter.daemon.acting.merges import Deferred, Merged, Merger, UnconfirmedMerges, count_settled
from promoter.daemon.acting.outcome import Outcome
from promoter.daemon.acting.pull_requests import PullRequests, pr_key
from promoter.daemon.acting.queues import QueueRunner
from promoter.daemon.acting.revert_writer import RevertWriter
from promoter.daemon.reading.reader import SnapshotReader
from promoter.engine import (
    REVERT_LABEL,
    Action,
    Announce,
    ApproveChange,
    ApprovePullRequest,
    ClosePullRequest,
    CommentPullRequest,
    CreateDeployment,
    DequeuePullRequest,
    EnqueuePullRequest,
    EnvLedger,
    HoldDryCommit,
    LedgerAction,
    MergeActiveIntoProposed,
    MergePullRequest,
    OpenPullRequest,
    OpenRevert,
    PauseEnvironment,
    PinEnvironment,
    RecordDequeue,
    RecordHealthy,
    RecordOverride,
    RecordQueueMerge,
    ReleaseHold,
    RequestReviewers,
    ResumeEnvironment,
    RevertOpened,
    SetCommitStatus,
    SetDeploymentStatus,
    Snapshot,
    UpdatePullRequest,
    ledger_changes,
)
from promoter.errors import ScmConflict, ScmNotFound, ScmQueueRequired
from promoter.git import GitMirror
from promoter.logs import log_context
from promoter.metrics import REVERTS_TOTAL, STATUS_WRITES_CAPPED, held_gauge
from promoter.state import GitLedger, PullRequestCache, StatusCache
from scm_plugins.protocol import ScmPlugin

log = logging.getLogger("promoter.actions")


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
    pull_requests: PullRequests = field(init=False)
    deployments: DeploymentReporter = field(init=False)

    def __post_init__(self) -> None:
        self.pull_requests = PullRequests(self.plugin, self.pr_cache, self.observers)
        self.deployments = DeploymentReporter(self.plugin, self.ledger)

    def run(
        self,
        snapshot: Snapshot,
        repo: Repository,
        mirror: GitMirror,
        actions: tuple[Action, ...],
        outcome: Outcome | None = None,
    ) -> Outcome:
        """Carry out ``actions`` in order, into ``outcome`` (the caller's, to read when the
        run raises). A refused action does not stop the others; the first refusal is
        raised at the end, for the queue to retry with its backoff."""
        outcome = Outcome() if outcome is None else outcome
        count_settled(snapshot, mirror, self.unconfirmed)
        refused: ScmConflict | ScmNotFound | None = None
        for action in actions:
            env = snapshot.environments[action.environment]
            if isinstance(action, RecordOverride) and env.branch not in outcome.merged:
                # A break-glass promotion is recorded only when its merge happened.
                log.warning(
                    "override not recorded: the merge did not happen",
                    extra={"strategy": snapshot.strategy, "environment": env.branch},
                )
                continue
            try:
                with log_context(environment=env.branch):
                    self._one(snapshot, repo, mirror, action, outcome)
            except (ScmConflict, ScmNotFound) as exc:
                outcome.failed_environment = outcome.failed_environment or env.branch
                # What we knew about the PR was wrong: forget it and read again.
                self.pr_cache.forget(pr_key(repo, env, action))
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
                outcome.failed_environment = env.branch
                raise
        if refused is not None:
            raise refused  # the queue retries with its backoff: quick once, slower if it repeats
        return outcome

    def _one(
        self,
        snapshot: Snapshot,
        repo: Repository,
        mirror: GitMirror,
        action: Action,
        outcome: Outcome,
    ) -> None:
        """Carry out one action; every kind of action has its case (checked by mypy)."""
        branch = snapshot.environments[action.environment].branch
        match action:
            case SetCommitStatus():
                wait = self.status_cache.writes.admit(repo.name, action.sha)
                if wait is not None:  # a loop: the write waits for the bound's window
                    capped(snapshot.strategy, repo, branch, action, wait)
                    outcome.requeue(wait)
                    return
                self.plugin.set_commit_status(repo=repo, sha=action.sha, status=action.status)
                self.status_cache.wrote(repo.name, action.sha, action.status)
                what = f"{action.status.key}: {action.status.description}"
                tell(self.observers, "status", snapshot.strategy, branch, what, action.sha)
                outcome.written.append(action)
            case OpenPullRequest() | UpdatePullRequest() | ClosePullRequest():
                self.pull_requests.change(snapshot, repo, action)
                outcome.requeue(0.0)
            case CommentPullRequest():
                self.pull_requests.comment(repo, action)
            case ApprovePullRequest():
                self.pull_requests.approve(snapshot, repo, action)
                outcome.requeue(0.0)
            case CreateDeployment():
                sha = action.sha or outcome.merge_shas.get(branch)
                if sha is not None:  # created once its merge happened
                    self.deployments.create(snapshot, repo, mirror, action, sha)
            case EnqueuePullRequest():
                deferred = self._queues().enqueue(snapshot, repo, mirror, action)
                if deferred is not None:
                    outcome.deferred[branch] = deferred.reason
                outcome.requeue(0.0)
            case RecordDequeue():
                QueueRunner(self.plugin, self.reader.gates, self.ledger).dequeued(
                    snapshot, mirror, action
                )
            case DequeuePullRequest():
                raced, told = QueueRunner(self.plugin, self.reader.gates, self.ledger).withdraw(
                    snapshot, repo, mirror, action
                )
                kind, what = (
                    ("queue-race", "merged before it could be taken out of the merge queue")
                    if raced
                    else ("dequeued", "taken out of the merge queue")
                )
                message = f"{what}: {action.reason}"
                tell(self.observers, kind, snapshot.strategy, branch, message, pr=action.number)
                comment = CommentPullRequest(
                    environment=action.environment, number=action.number, body=told
                )
                self.pull_requests.comment(repo, comment)
                outcome.requeue(0.0)
            case RecordQueueMerge():
                QueueRunner(self.plugin, self.reader.gates, self.ledger).merged(
                    snapshot, mirror, action
                )
                if action.race:
                    what = (
                        f"merged from the merge queue while it should have stopped: {action.race}"
                    )
                    strategy, number = snapshot.strategy, action.number
                    tell(self.observers, "queue-race", strategy, branch, what, pr=number)
            case SetDeploymentStatus():
                self.deployments.status(snapshot, repo, mirror, action)
            case RequestReviewers():
                self.pull_requests.request_reviewers(snapshot, repo, action)
                number = action.number
                self.ledger.update(
                    mirror,
                    snapshot.strategy,
                    branch,
                    lambda led: led.with_reviewers_requested(number),
                )
            case MergePullRequest():
                self._merge(snapshot, repo, mirror, action, outcome)
            case OpenRevert():
                self._revert(snapshot, repo, mirror, action)
                outcome.requeue(0.0)
            case MergeActiveIntoProposed():
                sha = merge_active_into_proposed(mirror, action, strategy=snapshot.strategy)
                if sha is not None:
                    what = f"{action.active_branch} merged into {action.proposed_branch}"
                    tell(self.observers, "mergeable", snapshot.strategy, branch, what, sha)
                self.on_merged(repo)  # the proposed branch moved, or someone else moved it
                outcome.requeue(0.0)
            case RecordHealthy():
                outcome.recorded.update(self._write(snapshot, mirror, action))
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
                self._write(snapshot, mirror, action)
                outcome.requeue(0.0)  # the ledger changed: show it at once
            case _:
                assert_never(action)

    def _queues(self) -> QueueRunner:
        """Enqueues remember an instance without the queue where the reader looks."""
        detection = self.reader.queue_detection
        return QueueRunner(self.plugin, self.reader.gates, self.ledger, detection)

    def _merge(
        self,
        snapshot: Snapshot,
        repo: Repository,
        mirror: GitMirror,
        action: MergePullRequest,
        outcome: Outcome,
    ) -> None:
        env = snapshot.environments[action.environment]
        merger = Merger(
            self.plugin, self.reader.gates, self.pr_cache, self.unconfirmed, self.on_merged
        )
        try:
            result: Merged | Deferred | None = merger.merge(
                snapshot, repo, action, pr_key(repo, env, action)
            )
        except ScmQueueRequired:
            if not env.queueing.from_scm or action.purpose != "promotion":
                raise  # mergeQueue: false says otherwise; reverts merge as they are
            self.reader.queue_detection.learn(self.plugin, repo, env.branch)
            result = self._queues().instead_of_merge(snapshot, repo, mirror, action)
        outcome.requeue(0.0)
        if result is None:
            return
        if isinstance(result, Deferred):
            outcome.deferred[env.branch] = result.reason
            return
        outcome.merge_shas[env.branch] = result.sha
        if result.sha != action.expected_head_sha:
            # A commit this merge made (not a fast-forward to the head CI ran on): the SCM
            # can report statuses on it only from now on, and those come by webhook, as
            # when its push webhook announces it (which GitHub sends seconds later).
            self.status_cache.created(repo.name, result.sha)
        kind = "reverted" if action.purpose == "revert" else "merged"
        what = f"merged {action.dry_sha[:7]}"
        prs = (env.pull_request, env.revert_pull_request)
        link = next((p.url for p in prs if p is not None and p.number == action.number), "")
        shas = {"dry_sha": action.dry_sha, "hydrated_sha": result.sha, "link": link}
        strategy, number = snapshot.strategy, action.number
        tell(self.observers, kind, strategy, env.branch, what, action.dry_sha, number, **shas)
        outcome.merged.append(env.branch)

    def _revert(
        self, snapshot: Snapshot, repo: Repository, mirror: GitMirror, action: OpenRevert
    ) -> None:
        """Push the revert commit, open its PR, then write the revert and its holds."""
        env = snapshot.environments[action.environment]
        branch, commit, pr = RevertWriter(self.plugin).write(repo, mirror, env, action)
        self.pr_cache.put((repo.name, branch, env.branch), pr)
        self.pull_requests.kept(snapshot, env.branch, (REVERT_LABEL,), pr)
        self._write(snapshot, mirror, RevertOpened(action, branch, commit, pr.number))
        REVERTS_TOTAL.inc(snapshot.strategy, env.branch, action.trigger)

    def _write(
        self, snapshot: Snapshot, mirror: GitMirror, action: LedgerAction | RevertOpened
    ) -> dict[str, EnvLedger]:
        """Write what the engine says ``action`` changes, then tell it; each environment's
        ledger as written. Changes to several environments (a revert and its holds) are
        one notes commit and one push."""
        branches = [env.branch for env in snapshot.environments]
        told = ledger_changes(action, branches=branches, now=snapshot.now)
        if len(told.changes) == 1:
            [(branch, change)] = told.changes.items()
            written = {
                branch: self.ledger.update(
                    mirror, snapshot.strategy, branch, change, durable=told.durable
                )
            }
        else:
            written = self.ledger.update_many(mirror, snapshot.strategy, told.changes)
        for branch, ledger in written.items():
            held_gauge(snapshot.strategy, branch, len(ledger.holds))
        if told.message:
            extra = {"strategy": snapshot.strategy, "environment": told.environment}
            level = logging.WARNING if told.level == "warning" else logging.INFO
            log.log(level, told.message, extra={**extra, "sha": told.sha, **told.fields})
        if told.event:
            strategy, branch = snapshot.strategy, told.environment
            text, sha = told.text, told.sha
            tell(self.observers, told.event, strategy, branch, text, sha, told.pr, dry_sha=sha)
        return written


def capped(
    strategy: str, repo: Repository, branch: str, action: SetCommitStatus, wait: float
) -> None:
    """A status write held back by the bound on writes per commit: told, and counted."""
    STATUS_WRITES_CAPPED.labels(repo.name).inc()
    log.warning(
        "status writes capped",
        extra={
            "strategy": strategy,
            "environment": branch,
            "sha": action.sha,
            "key": action.status.key,
            "retry_in": round(wait, 1),
        },
    )
