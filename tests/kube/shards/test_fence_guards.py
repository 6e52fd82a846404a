"""The write fence alone, on a fake clock: a write starts only while the shard's hold is
good (to the instant its deadline passes), never on a shard being handed over or not
held; the refusal says whether to wait (lapsed) or to give up (not ours); the writes in
flight are counted per shard, drained before a hand-over, even when one fails."""

from __future__ import annotations

import threading

import pytest

from promoter.errors import HoldLapsed, NotOwner
from promoter.kube.shards.fence import ShardFence
from promoter.metrics import sample
from scm_plugins.hold import before_send

DEADLINE = 9.0
SHARDS = {"gitops": "shard-001", "billing": "shard-002"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fence(clock: Clock) -> ShardFence:
    return ShardFence(shard_of=SHARDS.__getitem__, renew_deadline=DEADLINE, clock=clock)


def test_a_hold_is_good_from_the_start_of_its_renewal_until_just_before_its_deadline(
    fence: ShardFence, clock: Clock
) -> None:
    fence.renewed("shard-001", started=clock.now - 2)  # a slow answer shortens the hold
    clock.now += DEADLINE - 2 - 0.001
    assert fence.owns("gitops") and fence.held() == {"shard-001"}
    fence.check("gitops")
    clock.now += 0.001  # exactly the deadline: lapsed
    assert not fence.owns("gitops") and fence.held() == set()
    with pytest.raises(HoldLapsed):
        fence.check("gitops")


def test_a_renewal_moves_the_deadline_from_when_it_started(fence: ShardFence, clock: Clock) -> None:
    fence.renewed("shard-001", started=clock.now)
    clock.now += DEADLINE + 1
    assert not fence.owns("gitops")
    fence.renewed("shard-001", started=clock.now)
    assert fence.owns("gitops")
    clock.now += DEADLINE - 0.5
    assert fence.owns("gitops")


def test_a_shard_never_held_refuses_as_not_ours_and_counts_the_refusal(
    fence: ShardFence,
) -> None:
    before = sample("promoter_shard_fenced_writes_total")
    with pytest.raises(NotOwner) as refused:
        fence.check("gitops")
    assert str(refused.value) == "this replica does not hold shard-001 (repository gitops)"
    assert not fence.owns("gitops") and not fence.claims("gitops")
    assert fence.refused == 1
    assert sample("promoter_shard_fenced_writes_total") - before == 1


def test_a_lapsed_hold_refuses_as_temporary_with_a_third_of_the_deadline_to_wait(
    fence: ShardFence, clock: Clock
) -> None:
    fence.renewed("shard-001", started=clock.now)
    clock.now += DEADLINE
    with pytest.raises(HoldLapsed) as lapsed:
        fence.check("gitops")
    assert lapsed.value.delay == DEADLINE / 3
    assert str(lapsed.value) == "the hold on shard-001 lapsed (repository gitops)"
    assert fence.claims("gitops")  # still ours to work on: the renewal may come yet
    assert fence.refused == 1


def test_a_shard_being_handed_over_takes_no_write_and_is_no_longer_claimed(
    fence: ShardFence, clock: Clock
) -> None:
    fence.renewed("shard-001", started=clock.now)
    fence.revoke("shard-001")
    assert not fence.owns("gitops") and not fence.claims("gitops")
    assert fence.held() == {"shard-001"}  # held until released, but not written to
    with pytest.raises(NotOwner):
        fence.check("gitops")
    assert fence.owns("billing") is False


def test_a_dropped_shard_is_not_ours_at_all_and_a_new_hold_is_a_fresh_one(
    fence: ShardFence, clock: Clock
) -> None:
    fence.renewed("shard-001", started=clock.now)
    fence.revoke("shard-001")
    fence.drop("shard-001")
    assert fence.held() == set() and not fence.claims("gitops")
    with pytest.raises(NotOwner):
        fence.check("gitops")
    fence.renewed("shard-001", started=clock.now)  # taken again: not revoked any more
    assert fence.owns("gitops") and fence.claims("gitops")
    fence.drop("shard-002")  # dropping a shard never held is nothing


def test_each_shard_is_fenced_apart(fence: ShardFence, clock: Clock) -> None:
    fence.renewed("shard-002", started=clock.now)
    assert fence.owns("billing") and not fence.owns("gitops")
    with pytest.raises(NotOwner):
        fence.check("gitops")
    fence.check("billing")


def test_writes_in_flight_are_counted_and_released_even_when_one_fails(
    fence: ShardFence, clock: Clock
) -> None:
    fence.renewed("shard-001", started=clock.now)
    fence.renewed("shard-002", started=clock.now)
    with fence.writing("gitops"), fence.writing("gitops"), fence.writing("billing"):
        assert (fence.in_flight("shard-001"), fence.in_flight("shard-002")) == (2, 1)
    assert (fence.in_flight("shard-001"), fence.in_flight("shard-002")) == (0, 0)
    with pytest.raises(RuntimeError), fence.writing("gitops"):
        raise RuntimeError("the SCM failed")
    assert fence.in_flight("shard-001") == 0
    with pytest.raises(NotOwner), fence.writing("gitops"):
        fence.drop("shard-001")
        fence.check("gitops")
    assert fence.in_flight("shard-001") == 0


def test_a_refused_write_never_counts_as_in_flight(fence: ShardFence) -> None:
    with pytest.raises(NotOwner), fence.writing("gitops"):
        pass
    assert fence.in_flight("shard-001") == 0


def test_a_hand_over_waits_for_the_writes_in_flight_to_end(fence: ShardFence, clock: Clock) -> None:
    fence.renewed("shard-001", started=clock.now)
    assert fence.wait_drained("shard-001", timeout=0)
    started, finish = threading.Event(), threading.Event()

    def write() -> None:
        with fence.writing("gitops"):
            started.set()
            finish.wait(30)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert started.wait(30)
        fence.revoke("shard-001")
        assert not fence.wait_drained("shard-001", timeout=0.05)
        assert fence.wait_drained("shard-002", timeout=0)  # another shard has none
    finally:
        finish.set()
    assert fence.wait_drained("shard-001", timeout=30)
    writer.join(30)
    assert fence.in_flight("shard-001") == 0


def test_every_refusal_is_counted_not_only_the_first(fence: ShardFence, clock: Clock) -> None:
    for _ in range(3):
        with pytest.raises(NotOwner):
            fence.check("gitops")
    fence.renewed("shard-001", started=clock.now - DEADLINE)
    with pytest.raises(HoldLapsed):
        fence.check("gitops")
    assert fence.refused == 4


def test_a_write_asks_its_own_shards_hold_before_each_request_it_sends(
    fence: ShardFence, clock: Clock
) -> None:
    fence.renewed("shard-001", started=clock.now)
    with fence.writing("gitops"):
        assert before_send() == DEADLINE
        clock.now += 4
        assert before_send() == DEADLINE - 4
        fence.renewed("shard-002", started=clock.now)  # another shard's hold is no help
        clock.now += DEADLINE - 4
        with pytest.raises(HoldLapsed) as lapsed:
            before_send()
        assert str(lapsed.value) == "the hold on shard-001 lapsed (repository gitops)"
        fence.drop("shard-001")
        with pytest.raises(NotOwner) as lost:
            before_send()
        assert str(lost.value) == "this replica does not hold shard-001 (repository gitops)"
    assert before_send() is None  # outside the write, no hold is asked
