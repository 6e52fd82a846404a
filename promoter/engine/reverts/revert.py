"""Rule 8: automatic reverts to the last healthy commit, holds, and the pause after a
second failure. Pure, like the rest of the engine.

- A failure of an active gate counts only when reported after the active commit
  became active, and only once it has lasted ``settleTime``.
- The revert restores the newest healthy commit of the ledger that is older than
  (an ancestor of) the active dry SHA.
- A revert is never reverted: a failure while a revert is active pauses the
  environment instead, until a person releases it.
- A hold is lifted by itself when a dry commit that descends from it is proposed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from promoter.engine.core.actions import (
    Action,
    EnvState,
    OpenRevert,
    PauseEnvironment,
    ReleaseHold,
)
from promoter.engine.core.dag import and_downstream
from promoter.engine.core.ledger_state import HealthyRecord
from promoter.engine.core.merging import merge_action
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import EnvironmentSnapshot, Snapshot
from promoter.engine.gates.gates import error_reason
from promoter.models import CommitStatus, Phase, PullRequestState


@dataclass
class RevertOutcome:
    actions: list[Action] = field(default_factory=list)
    requeue: float | None = None
    verdict: tuple[EnvState, str] | None = None
    """When set, it replaces the environment's promotion verdict (a revert is under way)."""


def judge_revert(snapshot: Snapshot, index: int) -> RevertOutcome:
    """What rule 8 asks of environment ``index`` now."""
    env = snapshot.environments[index]
    out = RevertOutcome()
    if error_reason(env) is not None or env.active is None or env.active.dry_sha is None:
        return out
    out.actions.extend(_releases(snapshot, env, index))
    if _revert_in_flight(snapshot, env, index, out):
        return out
    if not env.auto_revert.enabled or env.ledger.paused is not None:
        return out
    failure = first_fresh_failure(env)
    if failure is None:
        return out
    active = env.active
    bad = active.dry_sha
    assert bad is not None
    if active_is_revert(env):
        reason = (
            f"{failure.key} failed on {short(bad)} after a revert; a revert is"
            " never reverted automatically"
        )
        out.actions.append(PauseEnvironment(environment=index, reason=reason))
        return out
    lasted = (snapshot.now - failure.updated_at).total_seconds()
    if lasted < env.auto_revert.settle_time:
        out.requeue = env.auto_revert.settle_time - lasted
        return out
    restore = restore_point(snapshot, env)
    if restore is None:
        return out
    out.actions.append(
        OpenRevert(
            environment=index,
            bad_dry_sha=bad,
            bad_hydrated_sha=active.hydrated_sha,
            restore=restore,
            reason=f"{failure.key} failed on {short(bad)} since"
            f" {failure.updated_at:%Y-%m-%d %H:%M:%S} UTC",
            trigger="auto",
            auto_merge=env.auto_revert.auto_merge,
            hold_in=and_downstream(snapshot, index),
        )
    )
    out.verdict = (
        EnvState.REVERTING,
        f"{failure.key} failed on {short(bad)}; reverting to {short(restore.dry_sha)}",
    )
    return out


def first_fresh_failure(env: EnvironmentSnapshot) -> CommitStatus | None:
    """The longest-failing active gate reported after the active commit became active
    (and after a person last released the environment)."""
    assert env.active is not None
    since = [t for t in (env.active_since, env.ledger.released_at) if t is not None]
    failures = [
        status
        for key in env.active_keys
        if (status := env.active.status(key)) is not None
        and status.phase is Phase.FAILURE
        and (not since or status.updated_at >= max(since))
    ]
    return min(failures, key=lambda s: s.updated_at, default=None)


def active_is_revert(env: EnvironmentSnapshot) -> bool:
    """The environment runs a commit that a revert restored."""
    assert env.active is not None
    return any(r.restored_dry_sha == env.active.dry_sha for r in env.ledger.reverts)


def restore_point(snapshot: Snapshot, env: EnvironmentSnapshot) -> HealthyRecord | None:
    """The newest healthy record older than the active dry SHA (an ancestor of it)."""
    assert env.active is not None and env.active.dry_sha is not None
    bad = env.active.dry_sha
    for record in reversed(env.ledger.healthy):
        if record.dry_sha != bad and snapshot.descends(bad, record.dry_sha):
            return record
    return None


def manual_revert(
    snapshot: Snapshot, index: int, *, to: str | None, auto_merge: bool, by: str = "a person"
) -> OpenRevert | str:
    """A revert a person (``by``) asked for, or why it cannot be done."""
    env = snapshot.environments[index]
    problem = error_reason(env)
    if problem is not None or env.active is None or env.active.dry_sha is None:
        return problem or f"{env.branch} cannot be read"
    if to is None:
        restore = restore_point(snapshot, env)
    else:
        restore = next(
            (r for r in reversed(env.ledger.healthy) if r.dry_sha.startswith(to.lower())), None
        )
    if restore is None:
        wanted = f"{to} as a" if to else "older"
        return f"the ledger of {env.branch} holds no {wanted} healthy commit"
    if restore.dry_sha == env.active.dry_sha:
        return f"{env.branch} already runs {short(restore.dry_sha)}"
    return OpenRevert(
        environment=index,
        bad_dry_sha=env.active.dry_sha,
        bad_hydrated_sha=env.active.hydrated_sha,
        restore=restore,
        reason=f"{by} asked to revert {env.branch} to {short(restore.dry_sha)}",
        trigger="manual",
        auto_merge=auto_merge,
        hold_in=and_downstream(snapshot, index),
    )


def _releases(snapshot: Snapshot, env: EnvironmentSnapshot, index: int) -> list[Action]:
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    if proposed is None:
        return []
    return [
        ReleaseHold(
            environment=index,
            dry_sha=h.dry_sha,
            reason=f"{short(proposed)} descends from it",
        )
        for h in env.ledger.holds
        if h.dry_sha != proposed and snapshot.descends(proposed, h.dry_sha)
    ]


def _revert_in_flight(
    snapshot: Snapshot, env: EnvironmentSnapshot, index: int, out: RevertOutcome
) -> bool:
    pr = env.revert_pull_request
    latest = env.ledger.reverts[-1] if env.ledger.reverts else None
    if pr is None or pr.state is not PullRequestState.OPEN or latest is None:
        return False
    restored = short(latest.restored_dry_sha)
    if latest.auto_merge and pr.head_sha == latest.revert_sha and not pr.draft:
        out.actions.append(merge_action(snapshot, index, pr.number, revert=latest))
        out.verdict = (EnvState.REVERTING, f"merging revert PR #{pr.number} back to {restored}")
    else:
        out.verdict = (
            EnvState.REVERTING,
            f"revert PR #{pr.number} back to {restored} waits for a person ({latest.reason})",
        )
    return True
