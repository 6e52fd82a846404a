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
from promoter.errors import ScmConflict
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
            fields = {"strategy": snapshot.strategy, "environment": env.branch}
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
                log.info("pull request opened", extra={**fields, "pr": pr.number})
                outcome.requeue(0.0)
                self._emit("opened", snapshot, env.branch, action.title, pr.head_sha, pr.number)
            elif isinstance(action, UpdatePullRequest):
                self.plugin.update_pull_request(
                    repo=repo,
                    number=action.number,
                    title=action.title,
                    body=action.body,
                    labels=action.labels,
                )
                log.info("pull request updated", extra={**fields, "pr": action.number})
                outcome.requeue(0.0)
                self._emit("updated", snapshot, env.branch, action.title, pr=action.number)
            elif isinstance(action, ClosePullRequest):
                self.plugin.close_pull_request(
                    repo=repo, number=action.number, comment=action.comment
                )
                log.info("pull request closed", extra={**fields, "pr": action.number})
                outcome.requeue(0.0)
                self._emit("closed", snapshot, env.branch, action.comment, pr=action.number)
            elif isinstance(action, MergePullRequest):
                self._merge(snapshot, repo, action, outcome)
            elif isinstance(action, RecordHealthy):
                self.ledger.record_healthy(
                    snapshot.strategy, env.branch, action.dry_sha, action.hydrated_sha, snapshot.now
                )
                log.info("environment healthy", extra={**fields, "sha": action.dry_sha})
                self._emit("healthy", snapshot, env.branch, "healthy", action.dry_sha)
        return outcome

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
        except ScmConflict as exc:
            log.info("merge refused, will re-read", extra={**fields, "reason": str(exc)})
            self.on_merged(repo)
            outcome.requeue(0.2)
            return
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
