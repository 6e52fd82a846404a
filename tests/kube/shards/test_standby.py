"""A replica keeps warm, at the warm-up's lower priority, the mirrors of the shards it
would be given if any one peer died, and only those: a kill -9 is then followed by
fetches of what moved, not clones, before the new owner's first reconciles."""

from __future__ import annotations

import random
import threading
from collections.abc import Collection
from pathlib import Path

import pytest

from promoter.git.remote_copy import RemoteCopy
from promoter.kube.shards.assignment import assign, standby
from promoter.kube.shards.standby import LookAhead, StandbyMirrors
from promoter.kube.shards.transfer import BACKGROUND_NICE
from tests.kube.cluster import NS, fake_cluster, wait_until
from tests.kube.shard_helpers import all_promoted, fleet, leased, owner_of, settled
from tests.kube.shards.test_warm_up_priority import thread_nice

TIMED = {"lease_duration": 2.0, "renew_deadline": 1.2, "retry_period": 0.2}


def mine(owner: dict[str, str], member: str) -> set[str]:
    return {shard for shard, m in owner.items() if m == member}


def test_the_standby_shards_are_told_once_per_change_of_members_or_weights() -> None:
    told: list[set[str]] = []
    look = LookAhead("r0", told.append)
    members = {"r0": "10.0.0.1", "r1": "10.0.0.2"}
    weights = {f"shard-{n}": 1.0 for n in range(8)}
    look(members, weights)
    look(dict(members), dict(weights))  # the same again: not told
    assert told == [standby(weights, members, "r0")]
    look({**members, "r2": "10.0.0.3"}, weights)  # a member joined
    look({**members, "r2": "10.0.0.3"}, {**weights, "shard-0": 9.0})  # a weight moved
    assert len(told) == 3
    assert told[1] == standby(weights, {**members, "r2": ""}, "r0")


@pytest.mark.parametrize("seed", range(20))
def test_every_shard_a_death_moves_goes_to_a_member_that_had_it_on_standby(seed: int) -> None:
    rng = random.Random(seed)
    weights = {f"shard-{n:03d}": float(rng.choice([0, 1, 2, 5, 30])) for n in range(64)}
    members = [f"r{n}" for n in range(rng.randint(2, 8))]
    now = assign(weights, members)
    ready = {m: standby(weights, members, m) for m in members}
    for m in members:
        assert not ready[m] & mine(now, m), "a shard it holds is on standby too"
    for dead in members:
        after = assign(weights, [m for m in members if m != dead])
        for shard, owner in after.items():
            assert shard in mine(now, owner) | ready[owner], (dead, shard, owner)
    for m in members:  # and nothing it would never be given
        given = set().union(
            *(mine(assign(weights, [x for x in members if x != d]), m) for d in members if d != m)
        )
        assert ready[m] == given - mine(now, m)


def test_a_lone_member_has_nothing_on_standby() -> None:
    assert standby({"shard-000": 3.0}, ["a"], "a") == set()


def test_standby_mirrors_are_fetched_once_each_at_the_lower_priority_and_not_those_warm() -> None:
    base = thread_nice()
    fetched: list[tuple[str, int]] = []
    fail = {"repo-3"}

    def fetch(name: str) -> None:
        fetched.append((name, thread_nice()))
        if name in fail:
            raise RuntimeError("the git server hangs up")

    mirrors = StandbyMirrors(fetch)
    mirrors.warmed({"repo-1"})
    mirrors.want({"repo-1", "repo-2", "repo-3"})
    wait_until(lambda: not mirrors.busy(), what="the standby clones")
    lower = min(19, base + BACKGROUND_NICE)
    assert sorted(fetched) == [("repo-2", lower), ("repo-3", lower)]
    assert thread_nice() == base
    fail.clear()
    mirrors.want({"repo-1", "repo-2", "repo-3"})  # a failed one is tried again
    wait_until(lambda: not mirrors.busy(), what="the standby clones")
    assert [name for name, _ in fetched] == ["repo-2", "repo-3", "repo-3"]
    assert mirrors.fetched == 2
    mirrors.stop()
    mirrors.want({"repo-4"})
    assert not mirrors.busy() and "repo-4" not in {name for name, _ in fetched}


def test_a_killed_replicas_repositories_are_taken_over_without_a_clone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clones: list[tuple[str, str, str]] = []
    """(replica, repository, thread) of every clone: a mirror is <state dir>/mirrors/..."""
    clone = RemoteCopy._clone_files

    def recorded(self: RemoteCopy) -> None:
        clones.append((self.path.parent.parent.name, self.name, threading.current_thread().name))
        clone(self)

    monkeypatch.setattr(RemoteCopy, "_clone_files", recorded)
    asked: dict[int, set[str]] = {}
    """Every repository each replica's look-ahead asked its standby for, as the members
    changed (a standby clone finished before a change was asked for then)."""
    want = StandbyMirrors.want

    def recorded_want(self: StandbyMirrors, repositories: Collection[str]) -> None:
        asked.setdefault(id(self), set()).update(repositories)
        want(self, repositories)

    monkeypatch.setattr(StandbyMirrors, "want", recorded_want)
    with fake_cluster(tmp_path) as cluster:
        repos = fleet(cluster, tmp_path, 8)
        first = [cluster.sharded(name, **TIMED) for name in ("a", "b", "c")]
        wait_until(lambda: settled(cluster, first), what="the shards to settle")
        first[0].stop()  # d replaces a: it clones at its join only what it is given
        replicas = [*first[1:], cluster.sharded("d", **TIMED)]
        wait_until(lambda: settled(cluster, replicas), what="the shards to settle")
        assert replicas[2].sharding is not None
        table = replicas[2].sharding.coordinator.table
        now = assign(table.work.weights, table.members)

        def gives_d(victim: str) -> bool:  # some of the victim's shards go to d
            after = assign(table.work.weights, set(table.members) - {victim})
            return any(now[s] == victim and after[s] == "d" for s in now)

        victim = next(r for r in replicas[:2] if gives_d(r.settings.identity))
        other = next(r for r in replicas[:2] if r is not victim)
        d = replicas[2]
        theirs = [n for n in repos if owner_of(replicas, n) is victim]
        assert theirs, "the victim holds none of the repositories"
        repository = {f"{NS}.repo-{n.removeprefix('app-')}" for n in theirs}
        ready: dict[str, set[str]] = {}
        for replica in (other, d):
            sharding = replica.sharding
            assert sharding is not None
            table = sharding.coordinator.table
            ahead = standby(table.work.weights, table.members, replica.settings.identity)
            expected = sharding.placement.repositories(ahead)
            name = replica.settings.identity

            def cloned(name: str = name, expected: set[str] = expected) -> bool:
                return expected <= {repo for who, repo, _ in clones if who == name}

            wait_until(cloned, what="the shards it would be given to be cloned ahead")
            wait_until(lambda s=sharding: not s.standby.busy(), what="the standby clones")
            on_standby = {
                repo for who, repo, thread in clones if (who, thread) == (name, "standby")
            }
            assert expected <= asked[id(sharding.standby)]
            assert on_standby <= asked[id(sharding.standby)], "cloned, never asked for"
            ready[name] = expected
        before = len(clones)
        survivors = [other, d]
        cluster.crash(victim)
        wait_until(lambda: leased(cluster, survivors), what="the takeover")
        assert any(owner_of(survivors, n) is d for n in theirs), "d took none of the victim's over"
        changes = {n: repos[n].change("2.0.0", f"Bump {n}", None) for n in theirs}
        for replica in survivors:
            replica.runtime.enqueue([f"{NS}.{n}" for n in theirs])
        wait_until(lambda: all_promoted(cluster, changes), what="their changes promoted")
        for replica in survivors:  # what each took over was on its standby
            taken = {
                f"{NS}.repo-{n.removeprefix('app-')}"
                for n in theirs
                if owner_of(survivors, n) is replica
            }
            assert taken <= ready[replica.settings.identity]
        # the standby thread goes on for the next death (the shards of the last peer)
        late = [(w, r) for w, r, t in clones[before:] if r in repository and t != "standby"]
        assert not late, f"cloned at the take-over: {late}"
