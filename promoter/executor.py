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
    MergePullRequest,
    OpenPullRequest,
    RecordHealthy,
    RequeueAfter,
    SetCommitStatus,
    UpdatePullRequest,
)
from promoter.engine.snapshot import Snapshot
from promoter.errors import ScmConflict, ScmNotFound
from promoter.ledger import Ledger
from promoter.metrics import PROMOTIONS_TOTAL
from promoter.models import Phase
from promoter.reader import SnapshotReader
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
    ledger: Ledger
    observers: list[Observer]
    on_merged: Callable[[Repository], None]

    def run(self, snapshot: Snapshot, repo: Repository, actions: tuple[Action, ...]) -> Outcome:
        outcome = Outcome()
        for action in actions:
            if isinstance(action, RequeueAfter):
                outcome.requeue(action.seconds)
                continue
            env = snapshot.environments[action.environment]
            key = (repo.name, env.proposed_branch, env.branch)
            try:
                self._one(snapshot, repo, action, outcome)
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
                outcome.requeue(0.2)
        return outcome

    def _one(self, snapshot: Snapshot, repo: Repository, action: Action, outcome: Outcome) -> None:
        assert not isinstance(action, RequeueAfter)
        env = snapshot.environments[action.environment]
        key = (repo.name, env.proposed_branch, env.branch)
        fields = {"strategy": snapshot.strategy, "environment": env.branch}
        cache = self.reader.pr_cache
        if isinstance(action, SetCommitStatus):
            self.plugin.set_commit_status(repo=repo, sha=action.sha, status=action.status)
            self.reader.status_cache.put(repo.name, action.sha, action.status)
            self._emit("status", snapshot, env.branch, action.status.description, action.sha)
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
            self.ledger.record_healthy(
                snapshot.strategy, env.branch, action.dry_sha, action.hydrated_sha, action.since
            )
            log.info("environment healthy", extra={**fields, "sha": action.dry_sha})
            self._emit("healthy", snapshot, env.branch, "healthy", action.dry_sha)

    def _merge(
        self, snapshot: Snapshot, repo: Repository, action: MergePullRequest, outcome: Outcome
    ) -> None:
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        statuses = {
            s.key: s for s in self.reader.statuses(repo, action.expected_head_sha, fresh=True)
        }
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
        self.reader.pr_cache.put((repo.name, env.proposed_branch, env.branch), None)
        PROMOTIONS_TOTAL.labels(snapshot.strategy, env.branch).inc()
        log.info("pull request merged", extra={**fields, "sha": action.dry_sha, "merge": merge_sha})
        self._emit(
            "merged",
            snapshot,
            env.branch,
            f"merged {action.dry_sha[:7]}",
            action.dry_sha,
            action.number,
        )
        self.on_merged(repo)
        outcome.merged.append(env.branch)
        outcome.requeue(0.0)

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
