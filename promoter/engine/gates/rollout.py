"""Staged rollouts (docs/rollouts.md): pins, blocked changes, notice periods, and the limit
on parallel promotions in a tier. Pure, like every rule of the engine.
"""

from __future__ import annotations

from datetime import timedelta

from promoter.engine.core.actions import Action, GateVerdict, MergePullRequest
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.messages import has_trailer, trailers
from promoter.models import Phase

PIN_KEY = "promoter/pin"
BLOCKED_KEY = "promoter/blocked-change"
NOTICE_KEY = "promoter/notice"


def pinned(snapshot: Snapshot, index: int) -> GateVerdict | None:
    """A person pinned the environment to a dry commit: nothing else is promoted there."""
    env = snapshot.environments[index]
    pin = env.ledger.pin
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    if pin is None or proposed is None or proposed == pin.dry_sha:
        return None
    reason = f"{env.branch} is pinned to {short(pin.dry_sha)}: {pin.reason}"
    return GateVerdict(name=PIN_KEY, phase=Phase.FAILURE, reason=reason)


def blocked_change(snapshot: Snapshot, index: int) -> GateVerdict | None:
    """A dry commit being promoted carries the blocking trailer and nobody approved it."""
    env = snapshot.environments[index]
    trailer = env.rollout.block_trailer
    if trailer is None:
        return None
    blocked = []
    label, pr, proposed = env.rollout.block_label, env.pull_request, env.proposed
    if (
        label is not None
        and pr is not None
        and label in pr.labels
        and proposed is not None
        and proposed.dry_sha not in env.ledger.approved_changes
    ):
        blocked.append(f"PR #{pr.number} (label {label})")
    for commit in env.changelog:
        found = trailers(commit.body)
        if has_trailer(found, trailer) and commit.sha not in env.ledger.approved_changes:
            why = next(v for k, v in found.items() if k.lower() == trailer.lower())
            blocked.append(f"{short(commit.sha)} ({trailer}: {why})")
    if not blocked:
        return None
    reason = (
        f"blocked before tier {env.rollout.tier}: {', '.join(blocked)};"
        " a person lets it through with promoter approve-change"
    )
    return GateVerdict(name=BLOCKED_KEY, phase=Phase.FAILURE, reason=reason)


def notice(snapshot: Snapshot, index: int) -> GateVerdict | None:
    """The tier's notice period: announced first, merged ``lead`` after the announcement."""
    env = snapshot.environments[index]
    lead = env.rollout.notice_lead
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    if lead is None or proposed is None:
        return None
    announced = env.ledger.announced(proposed)
    if announced is None:
        reason = f"{short(proposed)} is announced once every other gate passes"
        return GateVerdict(name=NOTICE_KEY, phase=Phase.PENDING, reason=reason)
    due = announced.at + timedelta(seconds=lead)
    if snapshot.now >= due:
        reason = f"announced {announced.at:%Y-%m-%d %H:%M:%S} UTC; notice period over"
        return GateVerdict(name=NOTICE_KEY, phase=Phase.SUCCESS, reason=reason)
    reason = f"upcoming: {short(proposed)} merges at {due:%Y-%m-%d %H:%M:%S} UTC"
    return GateVerdict(name=NOTICE_KEY, phase=Phase.PENDING, reason=reason, changes_at=due)


def in_flight(snapshot: Snapshot, index: int) -> bool:
    """Environment ``index`` was promoted since it was last recorded healthy: it runs a
    change that has not proven itself yet (whichever change that is)."""
    env = snapshot.environments[index]
    last = env.last_healthy
    return (
        env.active is not None and last is not None and last.hydrated_sha != env.active.hydrated_sha
    )


def over_parallel_limit(snapshot: Snapshot, index: int, merging: dict[str, int]) -> str | None:
    """Why merging into ``index`` now would exceed its tier's ``maxParallel``, if it would.

    ``merging`` counts the merges already decided in this pass, per tier.
    """
    env = snapshot.environments[index]
    tier, limit = env.rollout.tier, env.rollout.max_parallel
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    if tier is None or limit is None or proposed is None:
        return None
    busy = sum(
        1 for m in env.rollout.tier_members if m != index and in_flight(snapshot, m)
    ) + merging.get(tier, 0)
    if busy < limit:
        return None
    return f"tier {tier} already promotes {busy} of at most {limit} at once; waiting for one"


def limit_parallel(
    snapshot: Snapshot, index: int, actions: list[Action], merging: dict[str, int]
) -> str | None:
    """Drop a merge of ``index`` that exceeds the tier's limit (the reason), else count it."""
    merges = [a for a in actions if isinstance(a, MergePullRequest) and a.purpose == "promotion"]
    if not merges:
        return None
    why = over_parallel_limit(snapshot, index, merging)
    if why is not None:
        for merge in merges:
            actions.remove(merge)
        return why
    tier = snapshot.environments[index].rollout.tier
    if tier is not None:
        merging[tier] = merging.get(tier, 0) + 1
    return None
