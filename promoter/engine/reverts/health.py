"""What an up-to-date environment's active gates say about the commit it runs. Pure.

An environment with nothing to promote is "up to date", but that says nothing of its
health: a failed active gate makes it ``unhealthy`` (and says whether a revert follows,
and when); one not reported yet is named, with the commit to report it on.
"""

from __future__ import annotations

from datetime import timedelta

from promoter.engine.core.actions import EnvState
from promoter.engine.core.pr_text import short, unique
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.gates import phase_of
from promoter.engine.reverts.revert import active_is_revert, first_fresh_failure, restore_point
from promoter.models import Phase


def up_to_date(snapshot: Snapshot, index: int, reason: str) -> tuple[EnvState, str]:
    """The state and reason of environment ``index``, up to date as ``reason`` says."""
    env = snapshot.environments[index]
    active = env.active
    if active is None:
        return EnvState.UP_TO_DATE, reason
    phases = {key: phase_of(active, key) for key in unique(env.active_keys)}
    failed = [key for key, phase in phases.items() if phase is Phase.FAILURE]
    waiting = [key for key, phase in phases.items() if phase is Phase.PENDING]
    running = f"{short(active.hydrated_sha)}, the commit {env.branch} runs"
    if failed:
        said = f"{reason}; {', '.join(failed)} failed on {running}"
        return EnvState.UNHEALTHY, said + _revert_outlook(snapshot, index)
    if waiting:
        them = "it" if len(waiting) == 1 else "them"
        return EnvState.UP_TO_DATE, (
            f"{reason}; waiting for {', '.join(waiting)}: report {them} on {running}"
        )
    return EnvState.UP_TO_DATE, reason


def _revert_outlook(snapshot: Snapshot, index: int) -> str:
    """What rule 8 will do about the failure: nothing, revert at an instant, or cannot."""
    env = snapshot.environments[index]
    if not env.auto_revert.enabled:
        return ""
    if env.ledger.paused is not None:
        return f"; auto-promotion is paused: {env.ledger.paused}"
    if active_is_revert(env):
        return "; it runs what a revert restored, and a revert is never reverted automatically"
    failure = first_fresh_failure(env)
    if failure is None:
        return "; reported before this commit became active (or was released): no revert"
    if restore_point(snapshot, env) is None:
        return "; no healthy commit older than it to revert to"
    at = failure.updated_at + timedelta(seconds=env.auto_revert.settle_time)
    return f"; reverted if it still fails at {at:%Y-%m-%d %H:%M:%S} UTC"
