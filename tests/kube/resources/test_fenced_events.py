"""Events are fenced like every other write: one a reconcile made while its replica held
the strategy's shard, still waiting for the API server when the hold lapsed, is dropped,
not created by a replica that may no longer write there."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.kube.cluster import NS, fake_cluster, wait_until
from tests.kube.shard_helpers import ENVS, fleet, merges, promoted, settled
from tests.kube.shards.test_fencing import Paused


def events_by(cluster: object, instance: str) -> list[str]:
    fake = cluster.fake  # type: ignore[attr-defined]
    return [e["reason"] for e in fake.items("events") if e.get("reportingInstance") == instance]


def test_events_waiting_when_the_hold_lapses_are_dropped_and_made_again_once_held(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        repo = fleet(cluster, tmp_path, 1)["app-0"]
        a = cluster.sharded("a")
        assert a.sharding is not None
        wait_until(lambda: settled(cluster, [a]), what="a to hold the shard")
        wait_until(lambda: promoted(cluster, "app-0", repo.tip("main")), what="app-0 read")
        wait_until(a.publisher.idle, what="a's first Events created")
        before = events_by(cluster, "a")

        release = threading.Event()
        a.publisher.append(lambda: release.wait(30))  # the API server is slow for a while
        merged = merges(repo)
        repo.change("2.0.0", "Bump", ENVS)
        a.runtime.enqueue([f"{NS}.app-0"])
        wait_until(lambda: all(merges(repo)[b] > merged[b] for b in ENVS), what="the change merged")
        coordinator = a.sharding.coordinator
        lease_loop = Paused(coordinator.writer.kube)
        coordinator.writer.kube = lease_loop  # type: ignore[assignment]  # no renewal
        wait_until(lambda: not a.sharding.fence.held(), what="a's hold to lapse")
        release.set()
        wait_until(a.publisher.idle, what="what waited handed to the API server")
        assert events_by(cluster, "a") == before, "Events created after the hold lapsed"

        lease_loop.resume.set()
        wait_until(lambda: a.sharding.fence.held(), what="a to hold the shard again")
        third = repo.change("3.0.0", "Bump again", ENVS)
        a.runtime.enqueue([f"{NS}.app-0"])
        wait_until(lambda: promoted(cluster, "app-0", third), timeout=30, what="3.0.0 promoted")
        wait_until(
            lambda: "Promoted" in events_by(cluster, "a")[len(before) :],
            what="Events created again while held",
        )
