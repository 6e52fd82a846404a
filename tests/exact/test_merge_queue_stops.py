"""Stop means stop, on the local SCM's merge queue: a freeze, a hold or a pin takes a queued
promotion out of the queue (told on the PR and in the API), nothing merges while it lasts,
and once lifted the PR is enqueued again, once; a merge the queue made before the promoter
could take it out is a race, recorded in the ledger, shown in the API and on the PR.

The daemon's runtime is driven by hand (``tests.model.world``): each reconcile runs to
quiescence, CI reports on the queue's merge groups when the test says so."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from promoter.http import strategy_json
from promoter.metrics import REGISTRY
from promoter.models import Phase
from tests.model.world import DEV, STRATEGY, World

FROZEN = "frozen by ops"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """dev's promotion PR in the local SCM's queue, its merge group's checks to come."""
    world = World(tmp_path)
    world.push()
    world.report(world.tip(f"{DEV}-next"), "ci", Phase.SUCCESS)
    assert world.reconcile()
    assert list(world.plugin.queue_groups(repo=world.repo)) == [1]
    world.calls.clear()
    yield world
    world.close()


def dev(world: World) -> dict[str, Any]:
    view = strategy_json(world.config.strategy(STRATEGY), world.runtime.view(STRATEGY))
    return next(e for e in view["environments"] if e["branch"] == DEV)


def check(world: World, key: str) -> tuple[str, str] | None:
    statuses = world.plugin.store.statuses("gitops", world.tip(f"{DEV}-next"))
    found = next((s for s in statuses if s.key == key), None)
    return (found.phase.value, found.description) if found else None


def freeze(world: World) -> None:
    world.runtime.freezes.freeze(strategy=STRATEGY, environment=DEV, reason="ops", by="ada")


def unfreeze(world: World) -> None:
    world.runtime.freezes.unfreeze(strategy=STRATEGY, environment=DEV, by="ada")


def hold(world: World) -> None:
    world.runtime.operations.hold(STRATEGY, DEV, dry_sha=None, reason="bad build")


def release(world: World) -> None:
    world.runtime.operations.release(STRATEGY, DEV, dry_sha=None)


def pin(world: World) -> None:
    runs = world.dry_of(world.tip(DEV))
    world.runtime.operations.pin(STRATEGY, DEV, dry_sha=runs, reason="keep 1.0")


def unpin(world: World) -> None:
    world.runtime.operations.unpin(STRATEGY, DEV)


STOPS = {
    "freeze": (freeze, unfreeze, "promoter/freeze", "frozen by ada"),
    "hold": (hold, release, "promoter/hold", "is held in environment/dev"),
    "pin": (pin, unpin, "promoter/pin", "environment/dev is pinned to"),
}


@pytest.mark.parametrize("kind", list(STOPS))
def test_a_stop_takes_the_queued_promotion_out_and_lifting_it_enqueues_it_once(
    world: World, kind: str
) -> None:
    stop, lift, key, words = STOPS[kind]
    before = world.tip(DEV)
    stop(world)
    assert world.reconcile()
    assert world.plugin.queue_groups(repo=world.repo) == {}  # out of the queue
    assert world.calls == {("dequeue", 1): 1}
    env = dev(world)
    assert env["state"] == "blocked" and words in env["reason"]
    assert "pull request #1 is out of the merge queue until every gate passes" in env["reason"]
    assert env["mergeQueue"]["withdrawn"] is True
    said = check(world, key)
    assert said is not None and words in said[1]  # the rule's check says why, on the PR
    [told] = world.plugin.store.comments(1)[-1:]
    assert "took this pull request out of the merge queue" in told and words in told
    assert world.report_groups(Phase.SUCCESS) == []  # no group: nothing merges
    assert world.reconcile()
    assert world.tip(DEV) == before

    world.calls.clear()
    lift(world)
    assert world.reconcile()
    assert world.calls == {("enqueue", 1): 1}  # once, at once: no failed attempt's backoff
    assert world.reconcile() and world.calls == {("enqueue", 1): 1}  # and not again
    assert world.report_groups(Phase.SUCCESS) == [1]
    assert world.reconcile()
    assert world.dry_of(world.tip(DEV)) == world.dry_of(world.tip(f"{DEV}-next"))


def races(world: World) -> float:
    value = REGISTRY.get_sample_value(
        "promoter_merge_queue_races_total", {"strategy": STRATEGY, "environment": DEV}
    )
    return value or 0.0


@pytest.mark.parametrize("kind", list(STOPS))
def test_a_queue_that_merges_before_the_promoter_takes_it_out_is_a_recorded_race(
    world: World, kind: str
) -> None:
    stop, _, _, words = STOPS[kind]
    counted = races(world)
    stop(world)  # and before the promoter runs, the merge group's checks pass
    assert world.report_groups(Phase.SUCCESS) == [1]
    assert world.reconcile()
    [race] = world.ledger(DEV).queue_races
    assert race.number == 1 and words in race.reason
    env = dev(world)
    assert [r["pr"] for r in env["queueRaces"]] == [1]
    assert (
        "pull request #1 was merged from the merge queue while it should have stopped"
        in (env["reason"])
    )
    assert (
        "merged this pull request before the promoter could take it out"
        in (world.plugin.store.comments(1)[-1])
    )
    assert races(world) == counted + 1
    assert world.reconcile() and len(world.ledger(DEV).queue_races) == 1  # recorded once


def test_a_dequeue_that_finds_the_pr_merged_is_a_race_too(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue merges between the promoter's decision and its dequeue landing."""
    plugin = world.plugin
    dequeue: Callable[..., Any] = plugin.dequeue_pull_request

    def queue_merges_first(**kw: Any) -> Any:
        for sha in plugin.queue_groups(repo=world.repo).values():
            world.plugin.store.set_status("gitops", sha, status("queue-ci"))
        plugin.advance_queue(repo=world.repo)
        return dequeue(**kw)

    monkeypatch.setattr(plugin, "dequeue_pull_request", queue_merges_first)
    freeze(world)
    assert world.reconcile()
    [race] = world.ledger(DEV).queue_races
    assert race.number == 1 and "frozen by ada" in race.reason
    assert world.ledger(DEV).queue is not None and world.ledger(DEV).queue.merged_at is not None
    assert (
        "merged this pull request before the promoter could take it out"
        in (plugin.store.comments(1)[-1])
    )


def test_a_queue_merge_with_nothing_in_the_way_settles_the_attempt_and_is_no_race(
    world: World,
) -> None:
    assert world.report_groups(Phase.SUCCESS) == [1]
    assert world.reconcile()
    attempt = world.ledger(DEV).queue
    assert attempt is not None and attempt.merged_at is not None
    freeze(world)  # a freeze after the merge does not make it a race
    assert world.reconcile()
    assert world.ledger(DEV).queue_races == ()


def test_a_newer_head_takes_the_older_one_out_and_the_newer_one_is_enqueued(world: World) -> None:
    world.push()
    assert world.reconcile()
    assert world.plugin.queue_groups(repo=world.repo) == {}
    assert "a newer head: environment/dev-next is at" in world.ledger(DEV).queue.reason  # type: ignore[union-attr]
    world.calls.clear()
    world.report(world.tip(f"{DEV}-next"), "ci", Phase.SUCCESS)
    assert world.reconcile()
    assert world.calls == {("enqueue", 1): 1}
    assert world.report_groups(Phase.SUCCESS) == [1]


def status(key: str) -> Any:
    from promoter.models import CommitStatus

    return CommitStatus(key=key, phase=Phase.SUCCESS, source="ci")
