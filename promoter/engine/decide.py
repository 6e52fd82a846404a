"""``decide(snapshot) -> Decision``: the promotion rules of DESIGN.md §3, as a pure function.

Each environment is judged against the snapshot as it is: merges decided in this
pass are not assumed to have happened, so one pass never promotes a dry commit
through two environments. No I/O; ``snapshot.now`` is the only clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promoter.engine.core import pr_text
from promoter.engine.core.actions import (
    Action,
    ClosePullRequest,
    Decision,
    EnvironmentVerdict,
    EnvState,
    GateVerdict,
    OpenPullRequest,
    RecordHealthy,
    UpdatePullRequest,
)
from promoter.engine.core.dag import and_downstream
from promoter.engine.core.merging import merge_action
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import CommitState, Snapshot
from promoter.engine.gates.gates import error_reason, evaluate, is_no_op, phase_of
from promoter.engine.gates.publish import (
    RULE_KEYS,
    announce,
    builtin_statuses,
    gates_status,
    next_change,
    previous_environment_status,
    rule_status,
)
from promoter.engine.gates.rollout import limit_parallel
from promoter.engine.promotion import mergeable
from promoter.engine.promotion.deployments import deployment_actions
from promoter.engine.promotion.mergeable import REQUEUE_MERGEABLE, keep_mergeable
from promoter.engine.promotion.queue import (
    merged_from_queue,
    queue_step,
    race_note,
    withdrawals,
)
from promoter.engine.promotion.reviewers import request_reviewers
from promoter.engine.reverts.health import up_to_date
from promoter.engine.reverts.revert import judge_revert
from promoter.models import Phase, PullRequest, PullRequestState

REQUEUE_OPENED = 0.0
"""A PR opened with every gate passing is merged on the very next pass."""
REQUEUE_STALE_HEAD = 1.0
"""The SCM has not caught up with the proposed branch yet; look again shortly."""


@dataclass
class _Outcome:
    state: EnvState
    reason: str
    gates: tuple[GateVerdict, ...] = ()
    actions: list[Action] = field(default_factory=list)
    requeue: float | None = None
    queued: bool = False
    """The merge queue's step decided what the PR does there (``queue_step``)."""


def decide(snapshot: Snapshot) -> Decision:
    """Every action to take for one strategy now, and a verdict per environment."""
    actions: list[Action] = []
    verdicts: list[EnvironmentVerdict] = []
    requeues: list[float] = []
    merging: dict[str, int] = {}  # merges decided in this pass, per tier
    for index, env in enumerate(snapshot.environments):
        revert = judge_revert(snapshot, index)
        if revert.verdict is not None:
            outcome = _Outcome(*revert.verdict)
        else:
            outcome = _judge(snapshot, index)
            limited = limit_parallel(snapshot, index, outcome.actions, merging)
            if limited is not None:
                outcome.state, outcome.reason = EnvState.BLOCKED, limited
        stopped, said = ([], "") if outcome.queued else withdrawals(snapshot, index, outcome.reason)
        merged, raced = merged_from_queue(snapshot, index)
        actions.extend(stopped)  # stop means stop: out of the queue before anything else
        actions.extend(merged)
        outcome.reason += said + (raced or race_note(snapshot, index))
        actions.extend(revert.actions)
        if revert.requeue is not None:
            requeues.append(revert.requeue)
        actions.extend(outcome.actions)
        actions.extend(deployment_actions(snapshot, index, (*revert.actions, *outcome.actions)))
        actions.extend(_healthy(snapshot, index))
        if outcome.requeue is not None:
            requeues.append(outcome.requeue)
        verdicts.append(
            EnvironmentVerdict(
                branch=env.branch, state=outcome.state, reason=outcome.reason, gates=outcome.gates
            )
        )
    return Decision(
        actions=tuple(actions),
        environments=tuple(verdicts),
        requeue_after=min(requeues) if requeues else None,
    )


def _judge(snapshot: Snapshot, index: int) -> _Outcome:
    env = snapshot.environments[index]
    problem = error_reason(env)
    if problem is not None:
        return _Outcome(EnvState.ERROR, problem)
    if env.proposed is None:
        return _Outcome(EnvState.WAITING, f"waiting for the hydrator to push {env.proposed_branch}")
    assert env.active is not None and env.active.dry_sha is not None  # by error_reason
    assert env.proposed.dry_sha is not None
    active_sha, proposed_sha = env.active.dry_sha, env.proposed.dry_sha
    if is_no_op(snapshot, env):
        if proposed_sha == active_sha:
            reason = f"{env.branch} is up to date on {short(active_sha)}"
            why = f"nothing to promote: {env.branch} is already on {short(active_sha)}"
        else:
            reason = why = (
                f"nothing to promote: {short(proposed_sha)} renders the same manifests"
                f" as {short(active_sha)}"
            )
        state, reason = up_to_date(snapshot, index, reason)
        return _close_if_open(snapshot, index, state, reason, why)
    backwards = backwards_reason(snapshot, index, proposed_sha)
    if backwards is not None:
        return _close_if_open(snapshot, index, EnvState.BLOCKED, backwards, backwards)
    if env.proposed_in_active:
        why = (
            f"nothing to merge: {env.proposed_branch} ({short(proposed_sha)}) is already in"
            f" {env.branch}'s history; waiting for a newer dry commit"
        )
        return _close_if_open(snapshot, index, EnvState.BLOCKED, why, why)
    fix = keep_mergeable(snapshot, index)
    if fix is not None:
        return _Outcome(
            EnvState.BLOCKED, mergeable.reason(fix), actions=[fix], requeue=REQUEUE_MERGEABLE
        )
    return _promote(snapshot, index, env.proposed, active_sha)


def backwards_reason(snapshot: Snapshot, index: int, proposed_sha: str) -> str | None:
    """Rule 2: why merging ``proposed_sha`` would move environment ``index`` or one
    downstream of it (a later one, on a line) back.

    A later environment whose active dry SHA cannot be read is skipped: it is in
    error itself, and cannot be promoted until it is readable again.
    """
    for position in and_downstream(snapshot, index):
        later = snapshot.environments[position]
        active = later.active
        if active is None or active.dry_sha is None or active.metadata_error:
            continue
        if not snapshot.descends(proposed_sha, active.dry_sha):
            return (
                f"would move backwards: {short(proposed_sha)} is not a descendant of"
                f" {later.branch}'s {short(active.dry_sha)}"
            )
    return None


def _promote(snapshot: Snapshot, index: int, proposed: CommitState, active_sha: str) -> _Outcome:
    """Rules 3-6 for an environment with something to promote: its PR, the promoter's own
    checks on the PR's head, and the merge once nothing waits."""
    assert proposed.dry_sha is not None
    gates = evaluate(snapshot, index)
    pr = _open_pull_request(snapshot, index)
    text = pr_text.for_environment(
        snapshot, index, dry_sha=proposed.dry_sha, active_dry_sha=active_sha
    )
    outcome = _verdict(snapshot, index, proposed, gates, pr)
    outcome.actions = [
        *([open_pull_request(snapshot, index, text)] if pr is None else _update(index, pr, text)),
        *request_reviewers(snapshot, index, pr),
        *_checks(snapshot, index, proposed, gates, pr),
        *outcome.actions,  # the merge comes last, after the checks it is decided on
    ]
    return outcome


def _checks(
    snapshot: Snapshot,
    index: int,
    proposed: CommitState,
    gates: tuple[GateVerdict, ...],
    pr: PullRequest | None,
) -> list[Action]:
    """The promoter's own statuses on the proposed head (rules 4 and 5), and a tier's notice."""
    actions: list[Action] = [*previous_environment_status(snapshot, index, proposed, gates)]
    for key in RULE_KEYS:
        actions.extend(rule_status(snapshot, index, proposed, gates, key))
    actions.extend(builtin_statuses(snapshot, index, proposed, gates))
    actions.extend(announce(snapshot, index, proposed, gates, pr))
    actions.extend(gates_status(snapshot, index, proposed, gates))
    return actions


def _verdict(
    snapshot: Snapshot,
    index: int,
    proposed: CommitState,
    gates: tuple[GateVerdict, ...],
    pr: PullRequest | None,
) -> _Outcome:
    """What the environment waits for (a gate, its PR, a person), or its merge (rule 6)."""
    env = snapshot.environments[index]
    assert proposed.dry_sha is not None
    outcome = _Outcome(EnvState.BLOCKED, "", gates, requeue=next_change(snapshot, gates))
    waiting = [gate.reason for gate in gates if gate.phase is not Phase.SUCCESS]
    if waiting:
        outcome.reason = "; ".join(waiting)
    elif pr is None:
        outcome.state = EnvState.READY
        if env.auto_merge:
            outcome.reason = "every gate passes; merging once the pull request is open"
            outcome.requeue = REQUEUE_OPENED
        else:
            outcome.reason = "every gate passes; waiting for a person to merge"
    elif pr.draft:
        outcome.reason = f"pull request #{pr.number} is a draft"
    elif pr.head_sha != proposed.hydrated_sha:
        outcome.reason = (
            f"pull request #{pr.number} head {short(pr.head_sha)} is stale:"
            f" {env.proposed_branch} is at {short(proposed.hydrated_sha)}"
        )
        outcome.requeue = REQUEUE_STALE_HEAD
    elif not env.auto_merge:
        outcome.state = EnvState.READY
        outcome.reason = "every gate passes; waiting for a person to merge"
    elif env.queueing.on:
        outcome.state, outcome.reason, queued, outcome.requeue = queue_step(
            snapshot, index, proposed, pr
        )
        outcome.actions.extend(queued)
        outcome.queued = True
    else:
        outcome.state = EnvState.PROMOTING
        outcome.reason = f"merging pull request #{pr.number} to promote {short(proposed.dry_sha)}"
        outcome.actions.append(merge_action(snapshot, index, pr.number))
    return outcome


def open_pull_request(
    snapshot: Snapshot, index: int, text: pr_text.PullRequestText
) -> OpenPullRequest:
    """The promotion PR of environment ``index``: its ``-next`` branch into the active one."""
    env = snapshot.environments[index]
    return OpenPullRequest(
        environment=index,
        head=env.proposed_branch,
        base=env.branch,
        title=text.title,
        body=text.body,
        labels=text.labels,
    )


def _update(index: int, pr: PullRequest, text: pr_text.PullRequestText) -> list[Action]:
    """An update when the PR's text or labels drifted; labels people added are kept."""
    missing = tuple(label for label in text.labels if label not in pr.labels)
    if pr.title == text.title and pr_text.same_body(pr.body, text.body) and not missing:
        return []
    return [
        UpdatePullRequest(
            environment=index,
            number=pr.number,
            title=text.title,
            body=text.body,
            labels=pr.labels + missing,
        )
    ]


def _close_if_open(
    snapshot: Snapshot, index: int, state: EnvState, reason: str, why: str
) -> _Outcome:
    """Rules 1 and 2: a promotion PR with nothing (allowed) to promote is closed, saying why."""
    outcome = _Outcome(state, reason)
    pr = _open_pull_request(snapshot, index)
    if pr is not None:
        comment = pr_text.closing_comment(why)
        outcome.actions.append(
            ClosePullRequest(environment=index, number=pr.number, comment=comment)
        )
    return outcome


def _healthy(snapshot: Snapshot, index: int) -> list[Action]:
    """Rule 7: record the active commit as healthy when every active gate is success."""
    env = snapshot.environments[index]
    active = env.active
    if env.error or active is None or active.dry_sha is None or active.metadata_error:
        return []
    if any(phase_of(active, key) is not Phase.SUCCESS for key in env.active_keys):
        return []
    last = env.last_healthy
    if last is not None and (last.dry_sha, last.hydrated_sha) == (
        active.dry_sha,
        active.hydrated_sha,
    ):
        return []
    return [
        RecordHealthy(
            environment=index,
            dry_sha=active.dry_sha,
            hydrated_sha=active.hydrated_sha,
            since=snapshot.now,
        )
    ]


def _open_pull_request(snapshot: Snapshot, index: int) -> PullRequest | None:
    pr = snapshot.environments[index].pull_request
    return pr if pr is not None and pr.state is PullRequestState.OPEN else None
