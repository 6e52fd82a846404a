"""A soak after several environments (docs/gates.md, docs/rollouts.md): it counts from when
each group of upstreams met what it requires, the last group to do so deciding. For
``dependsOn`` that is the whole group, so from the last of them to run the change
healthy; for a tier with a quorum, from the ``require``-th, never from the first, and
without waiting for the ones past the quorum."""

from __future__ import annotations

from datetime import datetime, timedelta

from promoter.config import GateSpec
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord
from promoter.engine.core.snapshot import Snapshot, UpstreamGroup
from promoter.engine.gates.builtin import soak
from promoter.models import Phase
from tests.engine.strategies import NOW, Env, build, dry, hydrated

KEY = "promoter/soak"
HOUR = timedelta(hours=1)
SOAK = GateSpec.model_validate({"soak": {"duration": "1h"}}).soak


def fan_in(healthy: list[datetime | None], *groups: tuple[tuple[int, ...], int]) -> Snapshot:
    """Upstreams running dry 3, each healthy since its time (None: not healthy), then
    prod proposing dry 3 and waiting for ``groups`` (indices, require)."""
    upstreams = [Env(f"up-{n}", active=3, proposed=3) for n in range(len(healthy))]
    snapshot = build(*upstreams, Env("prod", active=1, proposed=3))
    envs = list(snapshot.environments)
    for index, since in enumerate(healthy):
        if since is not None:
            record = HealthyRecord(
                dry_sha=dry(3), hydrated_sha=hydrated(envs[index].branch, 3), healthy_since=since
            )
            envs[index] = envs[index].model_copy(update={"ledger": EnvLedger(healthy=(record,))})
    upstream = tuple(UpstreamGroup(indices=i, require=r) for i, r in groups)
    envs[-1] = envs[-1].model_copy(update={"upstreams": upstream})
    return snapshot.model_copy(update={"environments": tuple(envs)})


def judged(snapshot: Snapshot) -> tuple[Phase, datetime | None]:
    verdict = soak(SOAK, KEY, snapshot, len(snapshot.environments) - 1)
    assert verdict is not None
    return verdict.phase, verdict.changes_at


def test_after_depends_on_the_soak_counts_from_the_last_upstream_healthy() -> None:
    last = NOW - timedelta(minutes=10)
    snapshot = fan_in([NOW - 3 * HOUR, NOW - 2 * HOUR, last], ((0, 1, 2), 3))
    assert judged(snapshot) == (Phase.PENDING, last + HOUR)


def test_after_depends_on_the_soak_passes_once_the_last_upstream_ran_it_long_enough() -> None:
    snapshot = fan_in([NOW - 3 * HOUR, NOW - 2 * HOUR, NOW - HOUR], ((0, 1, 2), 3))
    assert judged(snapshot) == (Phase.SUCCESS, None)


def test_after_a_tier_the_soak_counts_from_when_its_quorum_was_met() -> None:
    second = NOW - timedelta(minutes=30)
    snapshot = fan_in([NOW - 3 * HOUR, second, NOW - timedelta(minutes=10)], ((0, 1, 2), 2))
    assert judged(snapshot) == (Phase.PENDING, second + HOUR)


def test_after_a_tier_the_soak_does_not_wait_for_the_environments_past_its_quorum() -> None:
    snapshot = fan_in([NOW - 3 * HOUR, None, NOW - 2 * HOUR], ((0, 1, 2), 2))
    assert judged(snapshot) == (Phase.SUCCESS, None)


def test_after_a_tier_short_of_its_quorum_the_soak_waits_and_names_it() -> None:
    snapshot = fan_in([NOW - 3 * HOUR, None, None], ((0, 1, 2), 2))
    verdict = soak(SOAK, KEY, snapshot, 3)
    assert verdict is not None and verdict.phase is Phase.PENDING
    assert verdict.reason.startswith(
        "soak: waiting for environment/up-0, environment/up-1, environment/up-2 to run"
    )
    assert verdict.changes_at is None


def test_with_several_groups_the_group_that_met_its_requirement_last_decides() -> None:
    later = NOW - timedelta(minutes=30)
    snapshot = fan_in([NOW - 3 * HOUR, later], ((0,), 1), ((1,), 1))
    assert judged(snapshot) == (Phase.PENDING, later + HOUR)
    swapped = fan_in([later, NOW - 3 * HOUR], ((0,), 1), ((1,), 1))
    assert judged(swapped) == (Phase.PENDING, later + HOUR)


def test_the_soak_ends_exactly_at_its_duration() -> None:
    assert judged(fan_in([NOW - HOUR], ((0,), 1))) == (Phase.SUCCESS, None)
    almost = NOW - HOUR + timedelta(seconds=1)
    assert judged(fan_in([almost], ((0,), 1))) == (Phase.PENDING, almost + HOUR)
