"""A renewal's hold counts from when the renewal was sent, not from its answer: another
replica counts its wait from when it last saw the Lease change, which may be as early as
the renewal's start, so a slow answer shortens our hold and never lengthens it."""

from __future__ import annotations

import pytest

from promoter.errors import HoldLapsed
from tests.kube.shards.lease_rounds import LEASE, Clock, LeaseStore, close, replica, run_round

SHARD = "shard-000"
REPO = f"repo-{SHARD}"


def test_a_slow_renewal_holds_the_shard_for_the_renew_deadline_from_when_it_was_sent() -> None:
    clock = Clock()
    store = LeaseStore(clock)
    a = replica(store, clock, "a", [SHARD])
    try:
        run_round(a, store)
        assert a.held() == {SHARD}
        clock.now += LEASE.retry_period
        store.slow = 1.0  # the API server answers each write a second after it was sent
        run_round(a, store)
        answered = max(at for at, name, _ in store.writes if name.endswith(SHARD))
        sent = answered - store.slow
        clock.now = sent + LEASE.renew_deadline - 0.01
        assert a.fence.owns(REPO)
        clock.now = sent + LEASE.renew_deadline + 0.01  # counted from the answer: 0.99 s left
        assert not a.fence.owns(REPO)
        with pytest.raises(HoldLapsed), a.fence.writing(REPO):
            pass
    finally:
        close(a)
