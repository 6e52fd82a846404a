"""The promoter's own checks on a PR head: rule 4, holds, pins, built-in gates, the summary.

Every check is rendered from its gate's verdict, the one the API shows at that moment:
its phase, and its reason as the description. What is written, and when:

- a check is first written once its verdict is decided (success or failure), so a PR
  whose previous environment is still on its way costs no write until it is healthy
  (or failed); a pending verdict is written from the start only where it tells the PR's
  reader what to do or until when (``eager``): an approval a person must give, a gate
  that time alone decides (a soak's or a window's ``changes_at``), a rule that applies
  (a hold, a pin, a blocked change, a freeze), and the summary of an environment a
  person merges;
- once on the head, a check follows its verdict, pending included;
- a check already showing the same phase and text is not written again.

On an SCM whose own merge check is a pipeline the promoter's statuses join (GitLab's
"Pipelines must succeed": ``snapshot.folded_keys``), nothing pending on the head means a
person may merge by hand before the promoter's gates pass. There a pending verdict is also
written from the start (``guards_manual_merge``) once the folded gates the environment
waits for report success (at once when it waits for none): until then the SCM's own
check refuses the merge, and the common path, CI finishing after the previous
environment is healthy, costs no write more.

So a change crossing an environment costs one write per check on GitHub, GitLab or
Forgejo (docs/performance.md), and no check ever says something its verdict does not.
"""

from __future__ import annotations

from datetime import timedelta

from promoter.engine.core.actions import (
    GATES_KEY,
    HOLD_KEY,
    PREVIOUS_ENVIRONMENT_KEY,
    Action,
    Announce,
    CommentPullRequest,
    GateVerdict,
    SetCommitStatus,
)
from promoter.engine.core.dag import upstreams_of
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import CommitState, Snapshot
from promoter.engine.gates.builtin import published_keys
from promoter.engine.gates.freeze import FREEZE_KEY
from promoter.engine.gates.rollout import BLOCKED_KEY, NOTICE_KEY, PIN_KEY
from promoter.models import CommitStatus, Phase, PullRequest

STATUS_SOURCE = "promoter"
MAX_DESCRIPTION = 140
"""GitHub's limit for a commit status description."""


def previous_environment_status(
    snapshot: Snapshot, index: int, proposed: CommitState, gates: tuple[GateVerdict, ...]
) -> list[Action]:
    """Rule 4 published on the proposed commit, from its verdict, once decided."""
    verdict = next((gate for gate in gates if gate.name == PREVIOUS_ENVIRONMENT_KEY), None)
    if not upstreams_of(snapshot, index) or verdict is None:
        return []
    eager = guards_manual_merge(snapshot, index, proposed)
    reason = clip(verdict.reason)
    return publish(
        snapshot, index, proposed, PREVIOUS_ENVIRONMENT_KEY, verdict.phase, reason, eager=eager
    )


def guards_manual_merge(snapshot: Snapshot, index: int, proposed: CommitState) -> bool:
    """Whether a pending check must be on the head now to stop a person merging early: on
    an SCM whose merge check folds the promoter's statuses in, once every folded gate the
    environment waits for is success there (module docstring)."""
    env = snapshot.environments[index]
    if not snapshot.folded_keys or not env.auto_merge:
        return False  # a person's environment has its summary pending from the start
    waited = [key for key in snapshot.folded_keys if key in env.proposed_keys]
    return all(
        (found := proposed.status(key)) is not None and found.phase is Phase.SUCCESS
        for key in waited
    )


RULE_KEYS = (HOLD_KEY, PIN_KEY, BLOCKED_KEY, FREEZE_KEY)
"""Rules shown as a failing check while they apply, and turned green when they stop."""


def rule_status(
    snapshot: Snapshot,
    index: int,
    proposed: CommitState,
    gates: tuple[GateVerdict, ...],
    key: str,
) -> list[Action]:
    """A hold, pin or blocked change shows as a failing check; when lifted it turns green."""
    verdict = next((gate for gate in gates if gate.name == key), None)
    existing = proposed.status(key)
    if verdict is None:
        if existing is None or existing.phase is Phase.SUCCESS:
            return []
        phase, description = Phase.SUCCESS, f"no {key.removeprefix('promoter/')} on this commit"
    else:
        phase, description = verdict.phase, clip(verdict.reason)
    # A rule that applies says why the PR waits, and until when or for whom: at once.
    return publish(snapshot, index, proposed, key, phase, description, eager=True)


def announce(
    snapshot: Snapshot,
    index: int,
    proposed: CommitState,
    gates: tuple[GateVerdict, ...],
    pr: PullRequest | None,
) -> list[Action]:
    """A tier's notice period starts when every other gate passes: record it, tell the PR."""
    env = snapshot.environments[index]
    notice_gate = next((g for g in gates if g.name == NOTICE_KEY), None)
    others_pass = all(g.phase is Phase.SUCCESS for g in gates if g.name != NOTICE_KEY)
    assert proposed.dry_sha is not None
    if notice_gate is None or not others_pass or env.ledger.announced(proposed.dry_sha):
        return []
    lead = env.rollout.notice_lead or 0.0
    due = snapshot.now + timedelta(seconds=lead)
    actions: list[Action] = [Announce(environment=index, dry_sha=proposed.dry_sha, at=snapshot.now)]
    if pr is not None:
        body = (
            f"Upcoming change: {short(proposed.dry_sha)} is ready for {env.branch} and merges"
            f" at {due:%Y-%m-%d %H:%M:%S} UTC, after the notice period of tier"
            f" {env.rollout.tier}. A person can promote it earlier (promoter promote)."
        )
        actions.append(CommentPullRequest(environment=index, number=pr.number, body=body))
    return actions


def builtin_statuses(
    snapshot: Snapshot, index: int, proposed: CommitState, gates: tuple[GateVerdict, ...]
) -> list[Action]:
    """Each configured built-in gate shows as its own check ``promoter/<name>`` on the PR:
    an approval, and a gate time alone decides, from the start; any other once decided."""
    env = snapshot.environments[index]
    keys = published_keys(snapshot, index)
    approvals = {g.key for g in env.gates if g.approval is not None}
    guard = guards_manual_merge(snapshot, index, proposed)
    return [
        action
        for gate in gates
        if gate.name in keys
        for action in publish(
            snapshot,
            index,
            proposed,
            gate.name,
            gate.phase,
            clip(gate.reason),
            eager=guard or gate.name in approvals or gate.changes_at is not None,
        )
    ]


def next_change(snapshot: Snapshot, gates: tuple[GateVerdict, ...]) -> float | None:
    """Seconds until the first gate that changes with time alone does (wake up then)."""
    times = [g.changes_at for g in gates if g.changes_at is not None]
    if not times:
        return None
    return max(0.0, (min(times) - snapshot.now).total_seconds())


def gates_status(
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
    shown = {*env.proposed_keys, *published_keys(snapshot, index), *RULE_KEYS}
    shown |= {PREVIOUS_ENVIRONMENT_KEY, NOTICE_KEY}
    unshown = [g for g in gates if g.phase is not Phase.SUCCESS and g.name not in shown]
    if env.auto_merge and not unshown and proposed.status(GATES_KEY) is None:
        return []
    own = tuple(g for g in gates if g.name not in snapshot.folded_keys)
    phase, description = _gates_summary(own, shown=shown, auto_merge=env.auto_merge)
    eager = not env.auto_merge or guards_manual_merge(snapshot, index, proposed)
    return publish(snapshot, index, proposed, GATES_KEY, phase, clip(description), eager=eager)


def _gates_summary(
    gates: tuple[GateVerdict, ...], *, shown: set[str], auto_merge: bool
) -> tuple[Phase, str]:
    """The worst phase of ``gates`` and a steady one-line account of the ones not passing.

    A failed gate is named. While gates are pending, those with a check of their own
    on the PR (``shown``) are named all together, passed or not, so that the text
    stays the same until the phase changes (a rewrite is an SCM call, and the PR
    shows each of those checks anyway); any other is described by its reason, the
    only place the PR shows it.
    """
    failed = [g for g in gates if g.phase is Phase.FAILURE]
    pending = [g for g in gates if g.phase is Phase.PENDING]
    if not failed and not pending:
        names = ", ".join(g.name for g in gates)
        done = f"every gate passes: {names}" if gates else "no promoter gates to wait for"
        return Phase.SUCCESS, done if auto_merge else f"{done}; waiting for a person to merge"
    parts = [f"failed: {', '.join(g.name if g.name in shown else g.reason for g in failed)}"]
    parts = parts if failed else []
    unshown = [g.reason for g in pending if g.name not in shown]
    if unshown:
        parts.append(f"waiting for: {', '.join(unshown)}")
    checks = [g.name for g in gates if g.name in shown and g not in failed]
    if any(g.name in shown for g in pending) and checks:
        parts.append(f"waiting until these pass: {', '.join(checks)}")
    return (Phase.FAILURE if failed else Phase.PENDING), "; ".join(parts)


def publish(
    snapshot: Snapshot,
    index: int,
    proposed: CommitState,
    key: str,
    phase: Phase,
    description: str,
    *,
    eager: bool = False,
) -> list[Action]:
    """The promoter's status ``key`` on the proposed commit, unless it is there already; a
    pending one only once the check is on the head, or when ``eager`` (module docstring)."""
    existing = proposed.status(key)
    if existing is None and phase is Phase.PENDING and not eager:
        return []
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


def clip(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"
