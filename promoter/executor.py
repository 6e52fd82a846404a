"""Carries out the engine's actions through the SCM plugin, the ledger and the caches.

Every action is logged with a fixed message and fields, and reported to observers
(the demo prints them). A merge re-reads the required gates from the SCM first,
because the cache may be stale (DESIGN rule 6).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from promoter.config import Repository
from promoter.engine.actions import (
    Action,
    ClosePullRequest,
    CommentPullRequest,
    MergePullRequest,
    OpenPullRequest,
    OpenRevert,
    PauseEnvironment,
    RecordHealthy,
    RecordOverride,
    ReleaseHold,
    RequeueAfter,
    SetCommitStatus,
    UpdatePullRequest,
)
from promoter.engine.ledger_state import EnvLedger, HealthyRecord, Hold, Override, Revert
from promoter.engine.snapshot import EnvironmentSnapshot, Snapshot
from promoter.errors import ScmConflict, ScmNotFound
from promoter.git import GitMirror
from promoter.ledger import GitLedger
from promoter.metrics import HOLDS, PROMOTIONS_TOTAL, REVERTS_TOTAL
from promoter.models import Phase
from promoter.reader import SnapshotReader
from promoter.revert_writer import RevertWriter
from scm_plugins.protocol import ScmPlugin

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

    def requeue(self, seconds: float) -> None:
        self.requeue_after = (
            seconds if self.requeue_after is None else min(self.requeue_after, seconds)
        )


@dataclass
class Executor:
    plugin: ScmPlugin
    reader: SnapshotReader
    ledger: GitLedger
    observers: list[Observer]
    on_merged: Callable[[Repository], None]

    def run(
        self,
        snapshot: Snapshot,
        repo: Repository,
        mirror: GitMirror,
        actions: tuple[Action, ...],
    ) -> Outcome:
        self._mirror = mirror
        outcome = Outcome()
        refused: ScmConflict | ScmNotFound | None = None
        for action in actions:
            if isinstance(action, RequeueAfter):
                outcome.requeue(action.seconds)
                continue
            env = snapshot.environments[action.environment]
            key = _pr_key(repo, env, action)
            try:
                self._one(snapshot, repo, action, outcome)
                if isinstance(action, RecordHealthy | PauseEnvironment | RecordOverride):
                    outcome.requeue(0.0)  # the ledger changed: show it at once
            except (ScmConflict, ScmNotFound) as exc:
                # What we knew about the PR was wrong: forget it and read again.
                self.reader.pr_cache.forget(key)
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
        if refused is not None:
            raise refused  # the queue retries with its backoff: quick once, slower if it repeats
        return outcome

    def _one(self, snapshot: Snapshot, repo: Repository, action: Action, outcome: Outcome) -> None:
        assert not isinstance(action, RequeueAfter)
        env = snapshot.environments[action.environment]
        key = _pr_key(repo, env, action)
        fields = {"strategy": snapshot.strategy, "environment": env.branch}
        cache = self.reader.pr_cache
        if isinstance(action, SetCommitStatus):
            self.plugin.set_commit_status(repo=repo, sha=action.sha, status=action.status)
            self.reader.status_cache.put(repo.name, action.sha, action.status)
            status = action.status
            self._emit(
                "status", snapshot, env.branch, f"{status.key}: {status.description}", action.sha
            )
        elif isinstance(action, OpenPullRequest):
            pr = self.plugin.open_pull_request(
                repo=repo,
                head=action.head,
                base=action.base,
                title=action.title,
                body=action.body,
                labels=action.labels,
            )
            cache.put(key, pr)
            log.info("pull request opened", extra={**fields, "pr": pr.number})
            self._emit("opened", snapshot, env.branch, action.title, pr.head_sha, pr.number)
            outcome.requeue(0.0)
        elif isinstance(action, UpdatePullRequest):
            pr = self.plugin.update_pull_request(
                repo=repo,
                number=action.number,
                title=action.title,
                body=action.body,
                labels=action.labels,
            )
            cache.put(key, pr)
            log.info("pull request updated", extra={**fields, "pr": action.number})
            self._emit("updated", snapshot, env.branch, action.title, pr=action.number)
            outcome.requeue(0.0)
        elif isinstance(action, ClosePullRequest):
            self.plugin.close_pull_request(repo=repo, number=action.number, comment=action.comment)
            cache.put(key, None)
            log.info("pull request closed", extra={**fields, "pr": action.number})
            self._emit("closed", snapshot, env.branch, action.comment, pr=action.number)
            outcome.requeue(0.0)
        elif isinstance(action, MergePullRequest):
            self._merge(snapshot, repo, action, outcome)
        elif isinstance(action, RecordHealthy):
            record = HealthyRecord(
                dry_sha=action.dry_sha, hydrated_sha=action.hydrated_sha, healthy_since=action.since
            )
            self._ledger(snapshot, env.branch, lambda led: led.with_healthy(record), durable=False)
            log.info("environment healthy", extra={**fields, "sha": action.dry_sha})
            self._emit("healthy", snapshot, env.branch, "healthy", action.dry_sha)
        elif isinstance(action, OpenRevert):
            self._revert(snapshot, repo, action, outcome)
        elif isinstance(action, ReleaseHold):
            self._ledger(snapshot, env.branch, lambda led: led.without_holds(action.dry_sha))
            log.info("hold released", extra={**fields, "sha": action.dry_sha})
            self._emit("released", snapshot, env.branch, action.reason, action.dry_sha)
            outcome.requeue(0.0)
        elif isinstance(action, PauseEnvironment):
            self._ledger(
                snapshot, env.branch, lambda led: led.model_copy(update={"paused": action.reason})
            )
            log.warning("environment paused", extra={**fields, "reason": action.reason})
            self._emit("paused", snapshot, env.branch, action.reason)
        elif isinstance(action, CommentPullRequest):
            self.plugin.comment_pull_request(repo=repo, number=action.number, body=action.body)
        elif isinstance(action, RecordOverride):
            override = Override(dry_sha=action.dry_sha, reason=action.reason, at=action.at)
            self._ledger(snapshot, env.branch, lambda led: led.with_override(override))

    def _merge(
        self, snapshot: Snapshot, repo: Repository, action: MergePullRequest, outcome: Outcome
    ) -> None:
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        statuses = self.reader.gates(repo, action.expected_head_sha, action.required_keys)
        stale = [
            k
            for k in action.required_keys
            if statuses.get(k) is None or statuses[k].phase is not Phase.SUCCESS
        ]
        if stale:
            log.info("merge deferred: gates changed", extra={**fields, "gates": stale})
            outcome.requeue(0.0)
            return
        try:
            merge_sha = self.plugin.merge_pull_request(
                repo=repo,
                number=action.number,
                expected_head_sha=action.expected_head_sha,
                message=action.message,
            )
        except ScmConflict:
            self.on_merged(repo)
            raise
        self.reader.pr_cache.put(_pr_key(repo, env, action), None)
        # A commit made just now has no status yet: statuses posted later arrive by webhook
        # or the API and merge into this entry, so the next read needs no SCM call.
        self.reader.status_cache.store(repo.name, merge_sha, [])
        if action.purpose != "revert":
            PROMOTIONS_TOTAL.labels(snapshot.strategy, env.branch).inc()
        log.info(
            "pull request merged",
            extra={**fields, "sha": action.dry_sha, "merge": merge_sha, "purpose": action.purpose},
        )
        self._emit(
            "reverted" if action.purpose == "revert" else "merged",
            snapshot,
            env.branch,
            f"merged {action.dry_sha[:7]}",
            action.dry_sha,
            action.number,
        )
        self.on_merged(repo)
        outcome.merged.append(env.branch)
        outcome.requeue(0.0)

    def _revert(
        self, snapshot: Snapshot, repo: Repository, action: OpenRevert, outcome: Outcome
    ) -> None:
        index = action.environment
        env = snapshot.environments[index]
        branch, commit, pr = RevertWriter(self.plugin).write(repo, self._mirror, env, action)
        self.reader.pr_cache.put((repo.name, branch, env.branch), pr)
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
        self._ledger(snapshot, env.branch, lambda led: led.with_revert(revert).with_hold(hold))
        for later in snapshot.environments[index + 1 :]:
            self._ledger(snapshot, later.branch, lambda led: led.with_hold(hold))
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
