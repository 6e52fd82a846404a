"""Two replicas contend for the Lease: one leads; when it dies or is cut off, the other
takes over within the lease duration, and no change is ever merged twice."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.kube.leadership.mode import NotLeader
from tests.kube.cluster import FAST_LEASE, NS, fake_cluster, local_objects, wait_until
from tests.kube.test_promotion import ENVS, at

LEASE = FAST_LEASE["lease_duration"]
RETRY = FAST_LEASE["retry_period"]


def test_one_of_two_replicas_leads_and_the_lease_names_it(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = cluster.replica("a"), cluster.replica("b")
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        time.sleep(LEASE * 1.5)
        assert a.leading() and not b.leading()
        lease = cluster.fake.get("leases", NS, "promoter-leader", group="coordination.k8s.io")
        assert lease is not None and lease["spec"]["holderIdentity"] == "a"


def test_when_the_leader_is_killed_the_other_takes_over_within_the_lease_duration(
    tmp_path: Path,
) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        a, b = cluster.replica("a"), cluster.replica("b")
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        local_objects(cluster, repo.path)
        first = repo.change("1.1.0", "First change", ENVS)
        wait_until(lambda: at(cluster, first), what="the first change promoted by a")

        killed = time.monotonic()
        a.stop(release=False)  # a crash: no hand-over, its renewals simply stop
        wait_until(b.leading, timeout=LEASE * 5, what="b to take over")
        failover = time.monotonic() - killed
        print(f"failover after the leader was killed: {failover:.2f}s (lease {LEASE}s)")
        assert failover <= LEASE + 3 * RETRY

        second = repo.change("1.2.0", "Second change", ENVS)
        wait_until(lambda: at(cluster, second), what="the second change promoted by b")
        for branch in ENVS:
            merges = git(repo.path, "rev-list", "--merges", branch).split()
            assert len(merges) == 2, f"{branch} has {len(merges)} merges for 2 changes"


def test_a_leader_cut_off_from_the_api_stops_writing_before_the_other_starts(
    tmp_path: Path,
) -> None:
    repo = GitOpsRepo.create(tmp_path, ENVS)
    with fake_cluster(tmp_path) as cluster:
        local_objects(cluster, repo.path)
        a, b = cluster.replica("a"), cluster.replica("b")
        changes: list[tuple[str, bool, float]] = []
        a.elector.on_stopped = lambda: changes.append(("a", False, time.monotonic()))
        b.elector.on_started = lambda: changes.append(("b", True, time.monotonic()))
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        time.sleep(0.3)
        cluster.fake.refused_holders.add("a")  # a can no longer renew; b can still write
        wait_until(b.leading, timeout=LEASE * 5, what="b to take over")
        assert [who for who, _, _ in changes] == ["a", "b"]
        stopped, started = changes[0][2], changes[1][2]
        assert started - stopped > 0.2, "b started before a had stopped leading for long"
        plugin = a.runtime.plugins["team.local"]
        gitops = a.runtime.config.repository("team.gitops")
        with pytest.raises(NotLeader):
            plugin.comment_pull_request(repo=gitops, number=1, body="a is not the leader")


def test_a_replica_that_stops_hands_the_lease_over_at_once(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = cluster.replica("a"), cluster.replica("b")
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        time.sleep(0.2)
        stopped = time.monotonic()
        a.stop()  # graceful: the Lease is released
        wait_until(b.leading, timeout=LEASE * 5, what="b to take over")
        assert time.monotonic() - stopped < LEASE
