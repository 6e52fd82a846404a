"""Promotion through a merge queue (GitHub) or merge train (GitLab): a PR every gate passes
is enqueued with its head as the guard, not merged; the queue merges it. A PR the queue
takes out without merging (a failed merge-group check, a conflict, a person) is a failed
attempt: its reason is told on the PR and shown as the environment's reason, and the PR is
enqueued again after a backoff (30 s, doubling to 10 min). A newer head starts afresh.

The attempt is in the ledger (``EnvLedger.queue``); the queue's answer
(``EnvironmentSnapshot.queue``) is read only while an attempt waits in it.
"""

from __future__ import annotations

from datetime import timedelta

from promoter.engine.core.actions import (
    Action,
    CommentPullRequest,
    EnqueuePullRequest,
    EnvState,
    RecordDequeue,
)
from promoter.engine.core.pr_text import short, unique
from promoter.engine.core.snapshot import CommitState, Snapshot
from promoter.models import PullRequest

RETRY = 30.0
MAX_RETRY = 600.0
WAITING = 60.0
"""While queued, look again this often though no webhook came (a lost merge_group hook)."""


def backoff(attempts: int) -> float:
    return float(min(MAX_RETRY, RETRY * 2.0 ** max(0, attempts - 1)))


def queue_step(
    snapshot: Snapshot, index: int, proposed: CommitState, pr: PullRequest
) -> tuple[EnvState, str, list[Action], float | None]:
    """What a PR ready to merge does on a queued branch: state, reason, actions, requeue."""
    env = snapshot.environments[index]
    assert proposed.dry_sha is not None
    attempt = env.ledger.queue
    if attempt is not None and (attempt.number, attempt.head_sha) != (pr.number, pr.head_sha):
        attempt = None  # another PR, or a newer head: a fresh start
    if attempt is not None and attempt.dequeued_at is None:
        entry = env.queue
        if entry is None or entry.queued:
            where = f" at position {entry.position}" if entry is not None and entry.position else ""
            state = f", {entry.state.lower()}" if entry is not None and entry.state else ""
            checks = (
                f", merge group checks {entry.checks.lower()}" if entry and entry.checks else ""
            )
            reason = f"pull request #{pr.number} is in the merge queue{where}{state}{checks}"
            return EnvState.PROMOTING, reason, [], WAITING
        why = entry.removed_reason or "taken out of the merge queue"
        told = (
            f"The merge queue took this pull request out without merging it ({why}). "
            f"The promoter enqueues it again in {int(backoff(attempt.attempts))} s."
        )
        actions: list[Action] = [
            RecordDequeue(environment=index, number=pr.number, reason=why, at=snapshot.now),
            CommentPullRequest(environment=index, number=pr.number, body=told),
        ]
        reason = f"dequeued from the merge queue (attempt {attempt.attempts}): {why}"
        return EnvState.BLOCKED, reason, actions, backoff(attempt.attempts)
    if attempt is not None and attempt.dequeued_at is not None:
        retry_at = attempt.dequeued_at + timedelta(seconds=backoff(attempt.attempts))
        if snapshot.now < retry_at:
            reason = (
                f"dequeued from the merge queue (attempt {attempt.attempts}): {attempt.reason};"
                f" enqueued again at {retry_at:%Y-%m-%d %H:%M:%S} UTC"
            )
            wait = (retry_at - snapshot.now).total_seconds()
            return EnvState.BLOCKED, reason, [], wait
    tries = attempt.attempts + 1 if attempt is not None else 1
    enqueue = EnqueuePullRequest(
        environment=index,
        number=pr.number,
        expected_head_sha=proposed.hydrated_sha,
        dry_sha=proposed.dry_sha,
        attempt=tries,
        required_keys=unique(env.proposed_keys),
    )
    reason = f"enqueuing pull request #{pr.number} to promote {short(proposed.dry_sha)}"
    return EnvState.PROMOTING, reason, [enqueue], 0.0
