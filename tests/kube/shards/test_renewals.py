"""How often a replica writes the Leases it holds: once few rounds are left before the
hold would lapse, not at every round, and never so late that a hold lapses."""

from __future__ import annotations

import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.shards.lease_writer import RENEW_TRIES, renew_every
from tests.kube.cluster import fake_cluster, wait_until
from tests.kube.shard_helpers import fleet, settled

SPACED = {"lease_duration": 6.0, "renew_deadline": 4.5, "retry_period": 0.2}
"""Renewed every 1.6 s or so (a round every 0.2 s)."""


def test_the_manifests_timings_renew_every_other_round_and_short_ones_every_round() -> None:
    manifests = LeaseSettings(namespace="team")  # 15 / 10 / 2 s, as deployment.yaml
    assert renew_every(manifests) == 3.0  # the round at 4 s after the last write
    bench = LeaseSettings("team", lease_duration=5.0, renew_deadline=3.0, retry_period=1.0)
    assert renew_every(bench) == 0.5  # every round, as before


@given(
    retry=st.floats(0.05, 5.0),
    deadline_rounds=st.floats(1.01, 20.0),
)
def test_a_hold_is_always_renewed_with_rounds_to_spare(
    retry: float, deadline_rounds: float
) -> None:
    """The first round past ``renew_every`` (rounds come ``retry`` apart) leaves at least
    ``RENEW_TRIES - 0.5`` more rounds before the hold lapses, or every round renews."""
    lease = LeaseSettings(
        "team",
        lease_duration=retry * deadline_rounds + 1.0,
        renew_deadline=retry * deadline_rounds,
        retry_period=retry,
    )
    every = renew_every(lease)
    assert every >= retry * 0.5
    latest_try = every + retry  # the round that finds it due, at the latest
    spare = lease.renew_deadline - latest_try
    assert every == retry * 0.5 or spare >= (RENEW_TRIES - 0.5) * retry - 1e-9
    assert every == retry * 0.5 or spare >= lease.renew_deadline * 2 / 3 - retry - 1e-9


def test_a_replica_writes_its_leases_every_few_rounds_and_no_hold_lapses(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 3)
        a = cluster.sharded("a", **SPACED)
        wait_until(lambda: settled(cluster, [a]), what="a to hold every shard")
        assert a.sharding is not None
        coordinator = a.sharding.coordinator

        def leases() -> dict[str, int]:
            """Writes of the shard group's Leases (the leader's one renews every round)."""
            return {
                name: n
                for (kind, name, _), n in cluster.fake.writes.items()
                if kind == "leases" and name != "promoter-leader"
            }

        before, rounds = leases(), coordinator.rounds
        time.sleep(4.0)
        after = leases()
        written = {name: after[name] - before.get(name, 0) for name in after}
        rounds = coordinator.rounds - rounds
        print(f"{rounds} rounds in 4 s; writes of each Lease: {sorted(written.values())}")
        assert rounds >= 10, "the loop did not run: nothing to judge"
        assert written and all(1 <= n <= 4 for n in written.values()), written
        assert coordinator.transitions["lapsed"] == 0
        assert coordinator.held() == set(coordinator.table.assigned)
