"""``decide(snapshot) -> Decision``: the promotion rules of DESIGN.md §3, as a pure function.

Each environment is judged against the snapshot as it is: merges decided in this
pass are not assumed to have happened, so one pass never promotes a dry commit
through two environments. No I/O; ``snapshot.now`` is the only clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promoter.engine import pr_text
from promoter.engine.actions import (
    GATES_KEY,
    HOLD_KEY,
    PREVIOUS_ENVIRONMENT_KEY,
    Action,
    ClosePullRequest,
    Decision,
    EnvironmentVerdict,
    EnvState,
    GateVerdict,
    MergePullRequest,
    OpenPullRequest,
    RecordHealthy,
    RequeueAfter,
    SetCommitStatus,
    UpdatePullRequest,
)
from promoter.engine.builtin import published_keys
from promoter.engine.dag import and_downstream, upstreams_of
from promoter.engine.gates import error_reason, evaluate, is_no_op, phase_of
from promoter.engine.pr_text import short
from promoter.engine.revert import judge_revert
from promoter.engine.snapshot import CommitState, Snapshot
from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState

STATUS_SOURCE = "promoter"
MAX_DESCRIPTION = 140
"""GitHub's limit for a commit status description."""

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


def decide(snapshot: Snapshot) -> Decision:
    """Every action to take for one strategy now, and a verdict per environment."""
    actions: list[Action] = []
    verdicts: list[EnvironmentVerdict] = []
    requeues: list[float] = []
    for index, env in enumerate(snapshot.environments):
        revert = judge_revert(snapshot, index)
        if revert.verdict is not None:
            outcome = _Outcome(*revert.verdict)
        else:
            outcome = _judge(snapshot, index)
        actions.extend(revert.actions)
        if revert.requeue is not None:
            requeues.append(revert.requeue)
        actions.extend(outcome.actions)
        actions.extend(_healthy(snapshot, index))
        if outcome.requeue is not None:
            requeues.append(outcome.requeue)
        verdicts.append(
            EnvironmentVerdict(
                branch=env.branch, state=outcome.state, reason=outcome.reason, gates=outcome.gates
            )
        )
    if requeues:
        actions.append(RequeueAfter(seconds=min(requeues)))
    return Decision(actions=tuple(actions), environments=tuple(verdicts))


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
        return _close_if_open(snapshot, index, EnvState.UP_TO_DATE, reason, why)
    backwards = backwards_reason(snapshot, index, proposed_sha)
    if backwards is not None:
        return _close_if_open(snapshot, index, EnvState.BLOCKED, backwards, backwards)
    if env.proposed_in_active:
        why = (
            f"nothing to merge: {env.proposed_branch} ({short(proposed_sha)}) is already in"
            f" {env.branch}'s history; waiting for a newer dry commit"
        )
        return _close_if_open(snapshot, index, EnvState.BLOCKED, why, why)
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
    """Rules 3-6 for an environment with something to promote."""
    env = snapshot.environments[index]
    assert proposed.dry_sha is not None
    gates = evaluate(snapshot, index)
    outcome = _Outcome(EnvState.BLOCKED, "", gates)
    text = pr_text.for_environment(
        snapshot, index, dry_sha=proposed.dry_sha, active_dry_sha=active_sha
    )
    pr = _open_pull_request(snapshot, index)
    if pr is None:
        outcome.actions.append(open_pull_request(snapshot, index, text))
    else:
        outcome.actions.extend(_update(index, pr, text))
    outcome.actions.extend(_previous_environment_status(snapshot, index, proposed, gates))
    outcome.actions.extend(_hold_status(snapshot, index, proposed, gates))
    outcome.actions.extend(_builtin_statuses(snapshot, index, proposed, gates))
    outcome.actions.extend(_gates_status(snapshot, index, proposed, gates))
    outcome.requeue = _next_change(snapshot, gates)

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
    else:
        outcome.state = EnvState.PROMOTING
        outcome.reason = f"merging pull request #{pr.number} to promote {short(proposed.dry_sha)}"
        outcome.actions.append(
            MergePullRequest(
                environment=index,
                number=pr.number,
                expected_head_sha=proposed.hydrated_sha,
                dry_sha=proposed.dry_sha,
                message=pr_text.merge_message(
                    strategy=snapshot.strategy,
                    branch=env.branch,
                    dry_sha=proposed.dry_sha,
                    number=pr.number,
                ),
                required_keys=pr_text.unique(env.proposed_keys),
            )
        )
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


def _previous_environment_status(
    snapshot: Snapshot, index: int, proposed: CommitState, gates: tuple[GateVerdict, ...]
) -> list[Action]:
    """Rule 4 published on the proposed commit, only when it differs from what is there."""
    verdict = next((gate for gate in gates if gate.name == PREVIOUS_ENVIRONMENT_KEY), None)
    if not upstreams_of(snapshot, index) or verdict is None:
        return []
    description = _clip(verdict.reason)
    if verdict.phase is Phase.PENDING:
        # One steady text while pending, so the PR's check is not rewritten (an SCM
        # call each time) as the previous environment moves from step to step.
        previous = ", ".join(
            snapshot.environments[u].branch
            for group in upstreams_of(snapshot, index)
            for u in group.indices
        )
        running = short(proposed.dry_sha or "")
        description = _clip(f"waiting for {previous} to run {running} and pass its gates")
    return _publish(snapshot, index, proposed, PREVIOUS_ENVIRONMENT_KEY, verdict.phase, description)


def _hold_status(
    snapshot: Snapshot, index: int, proposed: CommitState, gates: tuple[GateVerdict, ...]
) -> list[Action]:
    """A held dry SHA shows as a failing check on the PR; a lifted hold turns it green."""
    verdict = next((gate for gate in gates if gate.name == HOLD_KEY), None)
    existing = proposed.status(HOLD_KEY)
    if verdict is None:
        if existing is None or existing.phase is Phase.SUCCESS:
            return []
        phase, description = Phase.SUCCESS, "no hold on this commit"
    else:
        phase, description = verdict.phase, _clip(verdict.reason)
    return _publish(snapshot, index, proposed, HOLD_KEY, phase, description)


def _builtin_statuses(
    snapshot: Snapshot, index: int, proposed: CommitState, gates: tuple[GateVerdict, ...]
) -> list[Action]:
    """Each configured built-in gate shows as its own check ``promoter/<name>`` on the PR."""
    keys = published_keys(snapshot, index)
    return [
        action
        for gate in gates
        if gate.name in keys
        for action in _publish(snapshot, index, proposed, gate.name, gate.phase, _clip(gate.reason))
    ]


def _next_change(snapshot: Snapshot, gates: tuple[GateVerdict, ...]) -> float | None:
    """Seconds until the first gate that changes with time alone does (wake up then)."""
    times = [g.changes_at for g in gates if g.changes_at is not None]
    if not times:
        return None
    return max(0.0, (min(times) - snapshot.now).total_seconds())


def _gates_status(
    snapshot: Snapshot, index: int, proposed: CommitState, gates: tuple[GateVerdict, ...]
) -> list[Action]:
    """The summary check ``promoter/gates``: what the PR still waits for, in one line.

    Written where the PR's own checks do not tell the whole story: an environment
    merged by a person (the check to require in branch protection, so nobody merges
    before the promoter's gates pass), or a gate with no check of its own that is not
    passing (a pause, a built-in gate). Once on the head it is kept up to date.
    A gate whose result folds in this very status (``snapshot.folded_keys``) is left
    out of it, or each would wait for the other.
    """
    env = snapshot.environments[index]
    shown = {*env.proposed_keys, *published_keys(snapshot, index)}
    shown |= {PREVIOUS_ENVIRONMENT_KEY, HOLD_KEY}
    unshown = [g for g in gates if g.phase is not Phase.SUCCESS and g.name not in shown]
    if env.auto_merge and not unshown and proposed.status(GATES_KEY) is None:
        return []
    own = tuple(g for g in gates if g.name not in snapshot.folded_keys)
    phase, description = _gates_summary(own, shown=shown, auto_merge=env.auto_merge)
    return _publish(snapshot, index, proposed, GATES_KEY, phase, _clip(description))


def _gates_summary(
    gates: tuple[GateVerdict, ...], *, shown: set[str], auto_merge: bool
) -> tuple[Phase, str]:
    """The worst phase of ``gates`` and a steady one-line account of the ones not passing.

    A gate with a check of its own on the PR (``shown``) is named; any other is
    described by its reason, the only place the PR shows it.
    """
    failed = [g for g in gates if g.phase is Phase.FAILURE]
    pending = [g for g in gates if g.phase is Phase.PENDING]
    if not failed and not pending:
        names = ", ".join(g.name for g in gates)
        done = f"every gate passes: {names}" if gates else "no promoter gates to wait for"
        return Phase.SUCCESS, done if auto_merge else f"{done}; waiting for a person to merge"

    def words(verdicts: list[GateVerdict]) -> str:
        return ", ".join(g.name if g.name in shown else g.reason for g in verdicts)

    parts = [f"failed: {words(failed)}"] if failed else []
    if pending:
        parts.append(f"waiting for: {words(pending)}")
    return (Phase.FAILURE if failed else Phase.PENDING), "; ".join(parts)


def _publish(
    snapshot: Snapshot,
    index: int,
    proposed: CommitState,
    key: str,
    phase: Phase,
    description: str,
) -> list[Action]:
    """The promoter's status ``key`` on the proposed commit, unless it is there already."""
    existing = proposed.status(key)
    if existing is not None and existing.phase is phase and existing.description == description:
        return []
    status = CommitStatus(
        key=key,
        phase=phase,
        description=description,
        url=snapshot.status_url,
        source=STATUS_SOURCE,
        updated_at=snapshot.now,
    )
    return [SetCommitStatus(environment=index, sha=proposed.hydrated_sha, status=status)]


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


def _clip(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"
