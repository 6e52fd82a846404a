"""Carrying out a merge through a queue: the required gates read again (as before a merge),
the PR enqueued with its head as the guard, the attempt recorded in the environment's
ledger; a dequeue recorded as a failed attempt with the queue's reason; a merge the SCM
refused for want of its queue enqueued instead. Stop means stop: a PR taken out of the
queue where the promoter would not merge it now, the attempt recorded as withdrawn; one
the queue merged first (the SCM answers so) is a race, as is a merge the engine found made
while a freeze, a hold or a pin stopped it: in the ledger, the log and a metric. An SCM
instance without the queue (``ScmUnsupported``) defers the merge with what it lacks, and
is remembered for a while (``QueueDetection.lacks``), so that the environment shows it
and nothing asks again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from promoter.config import Repository
from promoter.daemon.acting.merges import Deferred, deferral
from promoter.daemon.reading.queue_detection import QueueDetection
from promoter.engine import (
    DequeuePullRequest,
    EnqueuePullRequest,
    EnvLedger,
    MergePullRequest,
    QueueAttempt,
    QueueRace,
    RecordDequeue,
    RecordQueueMerge,
    Snapshot,
)
from promoter.errors import PermanentError, ScmUnsupported
from promoter.git import GitMirror
from promoter.metrics import QUEUE_RACES_TOTAL
from promoter.models import CommitStatus, Phase
from promoter.state import GitLedger
from scm_plugins.protocol import MergeQueues, ScmPlugin

log = logging.getLogger("promoter.actions")


@dataclass
class QueueRunner:
    plugin: ScmPlugin
    gates: Callable[[Repository, str, tuple[str, ...]], dict[str, CommitStatus]]
    ledger: GitLedger
    detection: QueueDetection | None = None
    """Where an instance without the queue is remembered (the reader's)."""

    def enqueue(
        self, snapshot: Snapshot, repo: Repository, mirror: GitMirror, action: EnqueuePullRequest
    ) -> Deferred | None:
        """Enqueued (None), or deferred when a required gate is no longer success."""
        env = snapshot.environments[action.environment]
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        self._queues(env.branch)
        statuses = self.gates(repo, action.expected_head_sha, action.required_keys)
        stale = [
            k
            for k in action.required_keys
            if getattr(statuses.get(k), "phase", None) is not Phase.SUCCESS
        ]
        if stale:
            log.info("enqueue deferred: gates changed", extra={**fields, "gates": stale})
            return Deferred(deferral(stale, statuses, action.expected_head_sha))
        try:
            entry = self._queues(env.branch).enqueue_pull_request(
                repo=repo, number=action.number, expected_head_sha=action.expected_head_sha
            )
        except ScmUnsupported as exc:
            reason = f"merge queue not available on {exc.instance}: {exc.detail}"
            log.warning("merge queue not available", extra={**fields, "reason": reason})
            if self.detection is not None:
                self.detection.lacks(repo, env.branch, reason)
            return Deferred(reason)
        attempt = QueueAttempt(
            number=action.number,
            head_sha=action.expected_head_sha,
            attempts=action.attempt,
            enqueued_at=snapshot.now,
            dry_sha=action.dry_sha,
            url=env.pull_request.url if env.pull_request is not None else "",
        )
        self.ledger.update(
            mirror,
            snapshot.strategy,
            env.branch,
            lambda led: led.model_copy(update={"queue": attempt}),
        )
        log.info(
            "pull request enqueued",
            extra={**fields, "attempt": action.attempt, "position": entry.position},
        )
        return None

    def instead_of_merge(
        self, snapshot: Snapshot, repo: Repository, mirror: GitMirror, action: MergePullRequest
    ) -> Deferred | None:
        """The SCM refused ``action``'s merge because the branch merges through its queue:
        enqueue the PR instead, with the same head guard (its gates were just read again)."""
        env = snapshot.environments[action.environment]
        attempt = env.ledger.queue
        again = attempt is not None and (attempt.number, attempt.head_sha) == (
            action.number,
            action.expected_head_sha,
        )
        log.warning(
            "merge refused for want of the merge queue, enqueuing instead",
            extra={"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number},
        )
        enqueue = EnqueuePullRequest(
            environment=action.environment,
            number=action.number,
            expected_head_sha=action.expected_head_sha,
            dry_sha=action.dry_sha,
            attempt=attempt.attempts + 1 if again and attempt is not None else 1,
        )
        return self.enqueue(snapshot, repo, mirror, enqueue)

    def dequeued(self, snapshot: Snapshot, mirror: GitMirror, action: RecordDequeue) -> None:
        env = snapshot.environments[action.environment]
        attempt = env.ledger.queue
        if attempt is None or attempt.number != action.number:
            return
        failed = attempt.model_copy(update={"dequeued_at": action.at, "reason": action.reason})
        self.ledger.update(
            mirror,
            snapshot.strategy,
            env.branch,
            lambda led: led.model_copy(update={"queue": failed}),
        )
        log.warning(
            "pull request dequeued",
            extra={
                "strategy": snapshot.strategy,
                "environment": env.branch,
                "pr": action.number,
                "reason": action.reason,
                "attempt": attempt.attempts,
            },
        )

    def withdraw(
        self, snapshot: Snapshot, repo: Repository, mirror: GitMirror, action: DequeuePullRequest
    ) -> tuple[bool, str]:
        """Take the PR out of the queue; whether the queue merged it first, and what to tell
        on the PR."""
        env = snapshot.environments[action.environment]
        entry = self._queues(env.branch).dequeue_pull_request(repo=repo, number=action.number)
        fields = {"strategy": snapshot.strategy, "environment": env.branch, "pr": action.number}
        attempt = env.ledger.queue
        if attempt is None or attempt.number != action.number:
            return entry.merged, action.race_comment if entry.merged else action.comment
        if entry.merged:
            merged = RecordQueueMerge(
                environment=action.environment,
                number=action.number,
                dry_sha=action.dry_sha,
                at=action.at,
                race=action.race,
            )
            self.merged(snapshot, mirror, merged)
            return True, action.race_comment
        out = attempt.model_copy(
            update={"dequeued_at": action.at, "reason": action.reason, "withdrawn": True}
        )
        self.ledger.update(
            mirror, snapshot.strategy, env.branch, lambda led: led.model_copy(update={"queue": out})
        )
        log.warning(
            "pull request taken out of the merge queue", extra={**fields, "reason": action.reason}
        )
        return False, action.comment

    def merged(self, snapshot: Snapshot, mirror: GitMirror, action: RecordQueueMerge) -> None:
        """The attempt settled: merged; a race (``action.race``) recorded, logged, counted."""
        env = snapshot.environments[action.environment]
        attempt = env.ledger.queue
        if attempt is None or attempt.number != action.number:
            return
        settled = attempt.model_copy(update={"merged_at": action.at})
        race = QueueRace(
            number=action.number, dry_sha=action.dry_sha, reason=action.race, at=action.at
        )

        def change(led: EnvLedger) -> EnvLedger:
            led = led.model_copy(update={"queue": settled})
            return led.with_queue_race(race) if action.race else led

        self.ledger.update(mirror, snapshot.strategy, env.branch, change, durable=bool(action.race))
        if action.race:
            QUEUE_RACES_TOTAL.inc(snapshot.strategy, env.branch)
            log.warning(
                "merged from the merge queue before it could be taken out",
                extra={
                    "strategy": snapshot.strategy,
                    "environment": env.branch,
                    "pr": action.number,
                    "sha": action.dry_sha,
                    "reason": action.race,
                },
            )

    def _queues(self, branch: str) -> MergeQueues:
        if not isinstance(self.plugin, MergeQueues):
            raise PermanentError(
                f"the {self.plugin.name} SCM has no merge queue: set mergeQueue: false on {branch}"
            )
        return self.plugin
