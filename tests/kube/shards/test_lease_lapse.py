"""When a replica looks at the Leases again: at its retry period, or sooner, as soon as a
Lease held by another replica lapses (a dead replica's shards are taken over at the end of
its lease, not up to a retry period later)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.shards.coordinator import LAPSE_MARGIN, ShardCoordinator
from promoter.kube.shards.leases import Observed, Seen


def seen(name: str, holder: str, renewed: str = "t0") -> Seen:
    return Seen(
        name=name, role="member", holder=holder, address="", version="1", renewed=renewed, lease={}
    )


def test_the_next_lapse_is_the_soonest_held_lease_not_seen_to_change() -> None:
    observed = Observed()
    observed.update({"a": seen("a", "alice"), "free": seen("free", "")}, now=100.0)
    both = {"a": seen("a", "alice"), "b": seen("b", "bob"), "free": seen("free", "")}
    observed.update(both, now=103.0)
    assert observed.next_lapse(104.0, duration=5.0) == 1.0  # alice's, seen at 100
    observed.update({"a": seen("a", "alice", "t1"), "b": seen("b", "bob")}, 104.5)
    assert observed.next_lapse(105.0, duration=5.0) == 3.0  # bob's now: alice renewed
    assert observed.next_lapse(109.0, duration=5.0) == 0.5  # bob lapsed at 108: alice's
    assert observed.next_lapse(110.0, duration=5.0) is None  # both lapsed: nothing ahead
    assert Observed().next_lapse(0.0, duration=5.0) is None


class _Clocked:
    """What ``ShardCoordinator._pause`` reads: the Leases seen, the settings, a clock."""

    def __init__(self, observed: Observed, now: float) -> None:
        self.observed = observed
        self.lease = LeaseSettings(
            namespace="team", lease_duration=5.0, renew_deadline=3.0, retry_period=2.0
        )
        self.clock = lambda: now


def test_a_replica_wakes_when_a_lease_lapses_before_its_next_retry() -> None:
    observed = Observed()
    observed.update({"a": seen("a", "alice")}, now=100.0)
    pause: Callable[[Any], float] = ShardCoordinator._pause
    assert pause(_Clocked(observed, 100.0)) == 2.0  # 5 s ahead: the retry period first
    assert pause(_Clocked(observed, 104.5)) == 0.5 + LAPSE_MARGIN
    assert pause(_Clocked(observed, 106.0)) == 2.0  # lapsed: taken over in that round
