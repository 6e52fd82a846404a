"""Sharded replicas on the Kubernetes API stand-in: the repositories are shared out over
the live replicas, each promotes only its own, and shards move on join, leave and death
without a change merged twice or lost."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from promoter.kube.controller import Controller
from promoter.kube.controller import controller as controller_module
from tests.kube.cluster import NS, fake_cluster, wait_until
from tests.kube.shard_helpers import (
    all_promoted,
    fleet,
    holders,
    leased,
    merges,
    owner_of,
    settled,
)

TIMED = {"lease_duration": 2.0, "renew_deadline": 1.2, "retry_period": 0.2}
"""For the tests of a join, a hand-over or a takeover. How long those take is measured
by ``bench/shards.py``; these tests check what happened (who released, who acquired,
nothing lost), which no load can change."""


def acquired(*replicas: Controller) -> int:
    return sum(r.sharding.coordinator.transitions["acquired"] for r in replicas if r.sharding)


def released(*replicas: Controller) -> int:
    return sum(r.sharding.coordinator.transitions["released"] for r in replicas if r.sharding)


def test_three_replicas_share_the_repositories_and_each_promotes_its_own(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        repos = fleet(cluster, tmp_path, 6)
        replicas = [cluster.sharded(name) for name in ("a", "b", "c")]
        wait_until(lambda: settled(cluster, replicas), what="the shards to settle")
        first = {name: repo.tip("main") for name, repo in repos.items()}
        wait_until(lambda: all_promoted(cluster, first), what="every strategy read")
        changes = {name: repo.change("2.0.0", f"Bump {name}", None) for name, repo in repos.items()}
        wait_until(lambda: all_promoted(cluster, changes), what="every change promoted")
        for repo in repos.values():
            assert merges(repo) == {"environment/dev": 1, "environment/staging": 1}
        owners = {getattr(owner_of(replicas, name), "settings", None) for name in repos}
        assert None not in owners
        assert len(owners) >= 2, "every repository went to one replica"
        leases = holders(cluster)
        assert set(leases.values()) <= {"a", "b", "c"}
        for replica in replicas:
            assert replica.sharding is not None
            assert replica.sharding.coordinator.held() == {
                shard for shard, holder in leases.items() if holder == replica.settings.identity
            }
            assert f"{NS}.app-0" in {s.name for s in replica.runtime.strategies()}
        shares = [r.sharding.budget_shares()[f"{NS}.local"] for r in replicas if r.sharding]
        assert abs(sum(shares) - 1.0) < 1e-9, "the credential's budget is not split in whole"


def test_a_replica_that_joins_is_handed_its_share_and_one_that_stops_hands_its_shards_back(
    tmp_path: Path,
) -> None:
    """Handed over, never waited for: every shard that moves to the newcomer is released
    by its holder first (none is taken over once its Lease lapsed, which costs a lease),
    and the replica that stops releases each of its shards itself."""
    with fake_cluster(tmp_path) as cluster:
        repos = fleet(cluster, tmp_path, 6)
        a, b = cluster.sharded("a", **TIMED), cluster.sharded("b", **TIMED)
        wait_until(lambda: settled(cluster, [a, b]), what="a and b to settle")
        before = a.sharding.coordinator.table.assigned if a.sharding else {}
        released_before = released(a, b)
        c = cluster.sharded("c", **TIMED)
        wait_until(c.synced, what="c to list everything")
        wait_until(lambda: leased(cluster, [a, b, c]), what="c's share")
        wait_until(lambda: settled(cluster, [a, b, c]), what="c to count its share")
        assert c.sharding is not None
        after = c.sharding.coordinator.table.assigned
        changed = {s for s in after if before.get(s) != after[s]}
        assert c.sharding.coordinator.held() == {s for s, m in after.items() if m == "c"}
        assert c.sharding.coordinator.transitions["acquired"] == len(changed)
        moved = released(a, b) - released_before
        assert moved == len(changed), "a shard moved that its holder did not release"
        assert not any(r.sharding.coordinator.transitions["lost"] for r in (a, b, c) if r.sharding)

        change = {"app-0": repos["app-0"].change("2.0.0", "Bump", None)}
        held_by_c = c.sharding.coordinator.held()
        released_by_c = c.sharding.coordinator.transitions["released"]
        c.stop()  # SIGTERM: in-flight reconciles end, then every Lease is handed over
        assert c.sharding.coordinator.transitions["released"] - released_by_c == len(held_by_c)
        assert {s for s, holder in holders(cluster).items() if holder == "c"} == set()
        wait_until(lambda: leased(cluster, [a, b]), what="c's shards back")
        wait_until(lambda: settled(cluster, [a, b]), what="a and b to count them")
        a.runtime.enqueue(["team.app-0"])
        wait_until(lambda: all_promoted(cluster, change), what="the change after the hand-over")
        assert merges(repos["app-0"]) == {"environment/dev": 1, "environment/staging": 1}


def test_a_replica_starts_as_soon_as_the_last_of_its_lists_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last list may bring no object (no CommitStatus yet), so no change event: the
    controller still learns then that everything is listed, not at its next tick, which a
    joining replica's share waited for. Here the tick is an hour away: only being told
    starts the runtime."""
    monkeypatch.setattr(controller_module, "TICK", 3600.0)
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 2)
        cluster.fake.list_delays["commitstatuses"] = 0.3  # listed last, after the election
        replica = cluster.sharded("a", **TIMED)
        commit_statuses = replica.watchers["commitstatuses"]
        wait_until(commit_statuses.synced.is_set, what="the last list")
        wait_until(lambda: replica.runtime.started, what="the replica's runtime to start")


def test_a_stopping_replica_hands_its_shards_over_before_its_runtime_has_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its port closes at SIGTERM: until its Leases are released, a request for its
    repositories finds no owner that answers. So the shards go as soon as their writes in
    flight end, while the runtime stops (here a stop that takes 2 s: a long reconcile of
    another shard, a resync finishing)."""
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 6)
        a, b, c = (cluster.sharded(name, **TIMED) for name in ("a", "b", "c"))
        wait_until(lambda: settled(cluster, [a, b, c]), what="the shards to settle")
        assert c.sharding is not None and c.sharding.coordinator.held()
        runtime, close = c.runtime, c.runtime.close
        closing, go_on = threading.Event(), threading.Event()

        def slow_close() -> None:
            closing.set()
            go_on.wait(60)  # until the shards are held by the others
            close()

        monkeypatch.setattr(runtime, "close", slow_close)
        stopper = threading.Thread(target=c.stop)
        stopper.start()
        try:
            wait_until(closing.is_set, what="c's runtime to start closing")
            wait_until(lambda: leased(cluster, [a, b]), what="c's shards back")
            assert not go_on.is_set(), "the runtime finished closing first"
        finally:
            go_on.set()
            stopper.join(timeout=60)
        assert not stopper.is_alive()


def test_a_killed_replicas_repositories_are_taken_over_and_promote_again(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        repos = fleet(cluster, tmp_path, 6)
        replicas = [cluster.sharded(name, **TIMED) for name in ("a", "b", "c")]
        wait_until(lambda: settled(cluster, replicas), what="the shards to settle")
        b = replicas[1]
        assert b.sharding is not None
        orphaned = b.sharding.coordinator.held()
        theirs = [n for n in repos if owner_of(replicas, n) is b]
        assert orphaned and theirs
        survivors = [replicas[0], replicas[2]]
        acquired_before = acquired(*survivors)
        cluster.crash(b)
        wait_until(lambda: leased(cluster, survivors), what="the takeover")
        wait_until(lambda: settled(cluster, survivors), what="the survivors to count them")
        taken = acquired(*survivors) - acquired_before
        assert taken >= len(orphaned), "a killed replica's shards were not all taken over"
        changes = {n: repos[n].change("2.0.0", f"Bump {n}", None) for n in theirs}
        for replica in survivors:
            replica.runtime.enqueue([f"{NS}.{n}" for n in theirs])
        wait_until(lambda: all_promoted(cluster, changes), what="their changes promoted")
        for name in theirs:
            assert merges(repos[name]) == {"environment/dev": 1, "environment/staging": 1}
