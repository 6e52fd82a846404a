"""Two replicas contend for the Lease: one leads; when it dies or is cut off, the other
takes over once the Lease lapses (at once when it is released), and no change is ever
merged twice. How long a failover takes is measured by ``bench/shards.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.kube.leadership.mode import NotLeader
from tests.kube.cluster import FAST_LEASE, NS, fake_cluster, local_objects, wait_until
from tests.kube.test_promotion import ENVS, at

LEASE = FAST_LEASE["lease_duration"]
HOUR = {"lease_duration": 3600.0, "renew_deadline": 1800.0}
"""A Lease that lapses only after an hour: only its release hands it over in a test."""


def test_one_of_two_replicas_leads_and_the_lease_names_it(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = cluster.replica("a"), cluster.replica("b")
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        wait_until(lambda: b.elector.rounds >= 3, what="b to try three times")
        assert a.leading() and not b.leading()
        lease = cluster.fake.get("leases", NS, "promoter-leader", group="coordination.k8s.io")
        assert lease is not None and lease["spec"]["holderIdentity"] == "a"


def test_when_the_leader_is_killed_the_other_takes_over_and_nothing_merges_twice(
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

        a.stop(release=False)  # a crash: no hand-over, its renewals simply stop
        wait_until(b.leading, timeout=LEASE * 5, what="b to take over")

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
        changes: list[tuple[str, bool]] = []
        a.elector.on_stopped = lambda: changes.append(("a", False))
        b.elector.on_started = lambda: changes.append(("b", a.elector.is_leader()))
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        wait_until(lambda: b.elector.rounds >= 3, what="b to try three times")
        cluster.fake.refused_holders.add("a")  # a can no longer renew; b can still write
        wait_until(b.leading, timeout=LEASE * 5, what="b to take over")
        assert changes == [("a", False), ("b", False)], "b started while a still led"
        plugin = a.runtime.plugins["team.local"]
        gitops = a.runtime.config.repository("team.gitops")
        with pytest.raises(NotLeader):
            plugin.comment_pull_request(repo=gitops, number=1, body="a is not the leader")


def test_a_replica_that_stops_hands_the_lease_over_at_once(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b = (cluster.replica(n, **HOUR) for n in ("a", "b"))
        a.start()
        wait_until(a.leading, what="a to lead")
        b.start()
        wait_until(lambda: b.elector.rounds >= 3, what="b to try three times")
        a.stop()  # graceful: the Lease is released, b need not wait an hour for it to lapse
        wait_until(b.leading, what="b to take over")
