"""Promotion through a merge queue (GitHub) or merge train (GitLab): a PR every gate passes
is enqueued with its head as the guard, not merged; the queue merges it. A PR the queue
takes out without merging (a failed merge-group check, a conflict, a person) is a failed
attempt: its reason is told on the PR and shown as the environment's reason, and the PR is
enqueued again after a backoff (30 s, doubling to 10 min). A newer head starts afresh.

Stop means stop: the queue holds a PR only while the promoter would merge it now. Where it
would not (a freeze, a hold, a pin elsewhere, a newer head, a gate that fails, a revert
under way), the PR is taken out (``withdrawals``), told on the PR, and enqueued again
once, at once, when every gate passes. A PR merged while the promoter had it in the
queue settles the attempt; merged while a freeze, a hold or a pin stops it (the queue was
faster than the promoter), it is a race: recorded, told on the PR, shown as the reason.

The attempt is in the ledger (``EnvLedger.queue``); the queue's answer
(``EnvironmentSnapshot.queue``) is read only while an attempt waits in it.
"""

from __future__ import annotations

from datetime import timedelta

from promoter.engine.core.actions import (
    Action,
    CommentPullRequest,
    DequeuePullRequest,
    EnqueuePullRequest,
    EnvState,
    RecordDequeue,
    RecordQueueMerge,
)
from promoter.engine.core.ledger_state import QueueAttempt
from promoter.engine.core.pr_text import short, unique
from promoter.engine.core.snapshot import CommitState, Snapshot
from promoter.engine.gates.freeze import frozen
from promoter.models import PullRequest, PullRequestState

RETRY = 30.0
MAX_RETRY = 600.0
WAITING = 60.0
"""While queued, look again this often though no webhook came (a lost merge_group hook)."""
SETTLING = 2.0
"""The queue merged the PR after the environment was read: look again this soon, when the
environment runs it."""


def backoff(attempts: int) -> float:
    return float(min(MAX_RETRY, RETRY * 2.0 ** max(0, attempts - 1)))


def queue_step(
    snapshot: Snapshot, index: int, proposed: CommitState, pr: PullRequest
) -> tuple[EnvState, str, list[Action], float | None]:
    """What a PR ready to merge does on a queued branch: state, reason, actions, requeue."""
    env = snapshot.environments[index]
    assert proposed.dry_sha is not None
    attempt = env.ledger.queue
    older: list[Action] = []
    if attempt is not None and (attempt.number, attempt.head_sha) != (pr.number, pr.head_sha):
        if attempt.number == pr.number and attempt.waiting:  # an older head: out first
            older = withdraw(snapshot, index, attempt, newer_head(snapshot, index, pr))
        attempt = None  # another PR, or a newer head: a fresh start
    if attempt is not None and attempt.waiting:
        entry = env.queueing.entry
        if entry is None or entry.queued:
            where = f" at position {entry.position}" if entry is not None and entry.position else ""
            state = f", {entry.state.lower()}" if entry is not None and entry.state else ""
            checks = (
                f", merge group checks {entry.checks.lower()}" if entry and entry.checks else ""
            )
            reason = f"pull request #{pr.number} is in the merge queue{where}{state}{checks}"
            return EnvState.PROMOTING, reason, [], WAITING
        if entry.merged:  # between the branch's read and the queue's: no failed attempt
            reason = f"pull request #{pr.number} was merged by the merge queue"
            return EnvState.PROMOTING, reason, [], SETTLING
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
    if attempt is not None and attempt.dequeued_at is not None and not attempt.withdrawn:
        retry_at = attempt.dequeued_at + timedelta(seconds=backoff(attempt.attempts))
        if snapshot.now < retry_at:
            reason = (
                f"dequeued from the merge queue (attempt {attempt.attempts}): {attempt.reason};"
                f" enqueued again at {retry_at:%Y-%m-%d %H:%M:%S} UTC"
            )
            wait = (retry_at - snapshot.now).total_seconds()
            return EnvState.BLOCKED, reason, [], wait
    if attempt is None:
        tries = 1
    else:  # taken out by the promoter: no failed attempt, enqueued again at once
        tries = attempt.attempts if attempt.withdrawn else attempt.attempts + 1
    enqueue = EnqueuePullRequest(
        environment=index,
        number=pr.number,
        expected_head_sha=proposed.hydrated_sha,
        dry_sha=proposed.dry_sha,
        attempt=tries,
        required_keys=unique(env.proposed_keys),
    )
    reason = f"enqueuing pull request #{pr.number} to promote {short(proposed.dry_sha)}"
    return EnvState.PROMOTING, reason, [*older, enqueue], 0.0


def withdrawals(snapshot: Snapshot, index: int, why: str) -> tuple[list[Action], str]:
    """A PR the promoter has in the queue, where its verdict would not merge it now (``why``):
    taken out; and the words the environment's reason gains, while it is out."""
    env = snapshot.environments[index]
    attempt, pr = env.ledger.queue, env.pull_request
    if attempt is None or pr is None or pr.state is not PullRequestState.OPEN:
        return [], ""
    if pr.number != attempt.number or attempt.merged_at is not None:
        return [], ""
    out = f"; pull request #{pr.number} is out of the merge queue until every gate passes"
    if not attempt.waiting:
        return [], out if attempt.withdrawn else ""
    if not env.queueing.on or merged(snapshot, index, attempt):
        return [], ""
    proposed = env.proposed.hydrated_sha if env.proposed is not None else pr.head_sha
    if attempt.head_sha != proposed or attempt.head_sha != pr.head_sha:
        why = newer_head(snapshot, index, pr)
    return withdraw(snapshot, index, attempt, why or "it no longer passes its gates"), out


def newer_head(snapshot: Snapshot, index: int, pr: PullRequest) -> str:
    env = snapshot.environments[index]
    head = env.proposed.hydrated_sha if env.proposed is not None else pr.head_sha
    return f"a newer head: {env.proposed_branch} is at {short(head)}"


def withdraw(snapshot: Snapshot, index: int, attempt: QueueAttempt, why: str) -> list[Action]:
    """Out of the queue, ``why``; should the queue have merged it first, the race is what
    stops it (a freeze, a hold, a pin), or else ``why`` (a newer head, a failed gate)."""
    told = (
        f"The promoter took this pull request out of the merge queue: {why}. It enqueues it"
        " again once every gate passes."
    )
    race = stops(snapshot, index, attempt.dry_sha) if attempt.dry_sha else None
    return [
        DequeuePullRequest(
            environment=index,
            number=attempt.number,
            dry_sha=attempt.dry_sha,
            reason=why,
            race=race or why,
            at=snapshot.now,
            comment=told,
            race_comment=race_comment(race or why),
        )
    ]


def merged(snapshot: Snapshot, index: int, attempt: QueueAttempt) -> bool:
    """The environment runs what ``attempt`` promotes (or a later change): it merged."""
    active = snapshot.environments[index].active
    if not attempt.dry_sha or active is None or active.dry_sha is None:
        return False
    return snapshot.descends(active.dry_sha, attempt.dry_sha)


def merged_from_queue(snapshot: Snapshot, index: int) -> tuple[list[Action], str]:
    """The PR the promoter had waiting in the queue is merged now (the environment runs its
    change, whatever the PR's state as last read): the attempt settled, and, when a freeze,
    a hold or a pin stops it, the race recorded and told; the words the reason gains."""
    attempt = snapshot.environments[index].ledger.queue
    if attempt is None or not attempt.waiting or not merged(snapshot, index, attempt):
        return [], ""
    race = stops(snapshot, index, attempt.dry_sha)
    actions: list[Action] = [
        RecordQueueMerge(
            environment=index,
            number=attempt.number,
            dry_sha=attempt.dry_sha,
            at=snapshot.now,
            race=race or "",
        )
    ]
    if race is None:
        return actions, ""
    body = race_comment(race)
    actions.append(CommentPullRequest(environment=index, number=attempt.number, body=body))
    return actions, race_words(attempt.number, race)


def stops(snapshot: Snapshot, index: int, dry_sha: str) -> str | None:
    """What stops ``dry_sha`` from merging into environment ``index`` now: a freeze, a hold
    of it, a pin to another commit."""
    env = snapshot.environments[index]
    freeze = frozen(snapshot, index)
    if freeze is not None:
        return freeze.reason
    held = next((h for h in env.ledger.holds if h.dry_sha == dry_sha), None)
    if held is not None:
        return f"{short(dry_sha)} is held in {env.branch}: {held.reason}"
    pin = env.ledger.pin
    if pin is not None and pin.dry_sha != dry_sha:
        return f"{env.branch} is pinned to {short(pin.dry_sha)}: {pin.reason}"
    return None


def race_note(snapshot: Snapshot, index: int) -> str:
    """The words an environment's reason gains while it runs what a race merged."""
    env = snapshot.environments[index]
    race = env.ledger.queue_races[-1] if env.ledger.queue_races else None
    if race is None or env.active is None or env.active.dry_sha != race.dry_sha:
        return ""
    return race_words(race.number, race.reason)


def race_words(number: int, race: str) -> str:
    return (
        f"; pull request #{number} was merged from the merge queue while it should have"
        f" stopped ({race}): the queue merged it before the promoter could take it out"
    )


def race_comment(why: str) -> str:
    return (
        f"The merge queue merged this pull request before the promoter could take it out"
        f" ({why}). The merge is recorded in the environment's ledger as a merge queue race"
        " and shown in the promoter's API."
    )
