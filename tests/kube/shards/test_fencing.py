"""Fencing: a replica writes for a repository only while its hold on the shard Lease is
good on its own monotonic clock; paused past it, it writes nothing when it resumes."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from promoter.cli.sandbox import GitOpsRepo, git
from promoter.config import Repository
from promoter.errors import HoldLapsed, NotOwner
from promoter.git import GitMirror
from promoter.kube.resources.commit_statuses import CommitStatusIndex
from promoter.kube.runtime.scm import ClusterScm
from promoter.kube.shards.fence import ShardFence
from promoter.models import CommitStatus, Phase
from promoter.state.ledger import LEDGER_REF, GitLedger
from scm_plugins.protocol import ScmPlugin
from tests.kube.cluster import FAST_LEASE, NS, fake_cluster, wait_until
from tests.kube.shard_helpers import ENVS, fleet, merges, promoted, settled

DEADLINE = FAST_LEASE["renew_deadline"]
LEASE = FAST_LEASE["lease_duration"]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Recording:
    """An SCM plugin that records the writes that reach it."""

    name = "recording"

    def __init__(self) -> None:
        self.writes: list[str] = []

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self.writes.append(f"status {sha}")

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        self.writes.append(f"merge {number}")
        return "m" * 40

    def close(self) -> None:
        pass


def fenced(clock: Clock) -> tuple[ShardFence, Recording, Any]:
    fence = ShardFence(shard_of=lambda repo: "shard-001", renew_deadline=DEADLINE, clock=clock)
    inner = Recording()
    plugin = ClusterScm(inner, guard=fence.writing, statuses=CommitStatusIndex())  # type: ignore[arg-type]
    return fence, inner, plugin


REPO = Repository(name=f"{NS}.gitops", url="/nowhere", scm_provider="local")
STATUS = CommitStatus(key="ci", phase=Phase.SUCCESS)


def test_writes_pass_while_the_hold_is_good_and_are_refused_once_it_lapsed() -> None:
    clock = Clock()
    fence, inner, plugin = fenced(clock)
    with pytest.raises(NotOwner):
        plugin.set_commit_status(repo=REPO, sha="a" * 40, status=STATUS)  # never held
    fence.renewed("shard-001", started=clock.now)
    clock.now += DEADLINE * 0.9
    plugin.merge_pull_request(repo=REPO, number=1, expected_head_sha="b" * 40, message="m")
    clock.now += DEADLINE * 0.2  # paused: no renewal came, the deadline passed
    with pytest.raises(HoldLapsed):  # temporary: the lease loop may renew it yet
        plugin.merge_pull_request(repo=REPO, number=2, expected_head_sha="b" * 40, message="m")
    fence.drop("shard-001")  # the loop saw another replica hold it
    with pytest.raises(NotOwner):
        plugin.merge_pull_request(repo=REPO, number=3, expected_head_sha="b" * 40, message="m")
    assert inner.writes == ["merge 1"]
    assert fence.refused == 3


def test_a_shard_being_handed_over_takes_no_new_write_but_lets_one_in_flight_end() -> None:
    clock = Clock()
    fence, inner, plugin = fenced(clock)
    fence.renewed("shard-001", started=clock.now)
    with fence.writing(REPO.name):
        fence.revoke("shard-001")
        assert fence.in_flight("shard-001") == 1
        with pytest.raises(NotOwner):
            plugin.set_commit_status(repo=REPO, sha="a" * 40, status=STATUS)
    assert fence.in_flight("shard-001") == 0
    assert inner.writes == []


def test_a_git_push_and_the_ledger_push_nothing_once_the_hold_lapsed(tmp_path: Path) -> None:
    clock = Clock()
    fence = ShardFence(shard_of=lambda repo: "shard-001", renew_deadline=DEADLINE, clock=clock)
    remote = GitOpsRepo.create(tmp_path, ENVS)
    mirror = GitMirror(
        name=REPO.name,
        url=str(remote.path),
        root=tmp_path / "state",
        push_guard=lambda: fence.writing(REPO.name),
    )
    mirror.ensure()
    mirror.fetch()
    ledger = GitLedger()
    fence.renewed("shard-001", started=clock.now)
    ledger.update(mirror, "app", "environment/dev", lambda e: e.model_copy(update={"paused": "x"}))
    pushed = git(remote.path, "rev-parse", LEDGER_REF)
    clock.now += DEADLINE + 0.01
    with pytest.raises(HoldLapsed):
        ledger.update(
            mirror, "app", "environment/staging", lambda e: e.model_copy(update={"paused": "y"})
        )
    ledger.flush_all()  # still lapsed: kept for when the hold is renewed
    assert git(remote.path, "rev-parse", LEDGER_REF) == pushed
    fence.drop("shard-001")  # another replica holds it now
    ledger.flush_all()  # the change kept for later is dropped, not retried for ever
    fence.renewed("shard-001", started=clock.now)  # even held again: nothing left to push
    ledger.flush_all()
    assert git(remote.path, "rev-parse", LEDGER_REF) == pushed


class Pausing:
    """A plugin that, once armed, stops the next reconcile where it fetches the repository
    (as if the process were paused there, before any write) until released."""

    def __init__(self, inner: ScmPlugin) -> None:
        self.inner = inner
        self.armed = threading.Event()
        self.paused = threading.Event()
        self.resume = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def git_environment(self, **kwargs: Any) -> Any:
        if self.armed.is_set():
            self.armed.clear()
            self.paused.set()
            self.resume.wait(30)
        return self.inner.git_environment(**kwargs)


class Paused:
    """The Kubernetes API as a paused replica's lease loop sees it: its next call waits."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.resume = threading.Event()

    def __getattr__(self, name: str) -> Any:
        self.resume.wait(30)
        return getattr(self.inner, name)


def test_a_replica_paused_past_its_lease_never_writes_after_it_resumes(tmp_path: Path) -> None:
    plugins: list[Pausing] = []

    def pausing(inner: ScmPlugin) -> ScmPlugin:
        plugins.append(Pausing(inner))
        return plugins[-1]  # type: ignore[return-value]

    with fake_cluster(tmp_path) as cluster:
        repo = fleet(cluster, tmp_path, 1)["app-0"]
        a = cluster.sharded("a", scm=pausing)
        wait_until(lambda: settled(cluster, [a]), what="a to hold the shard")
        wait_until(lambda: promoted(cluster, "app-0", repo.tip("main")), what="app-0 read")
        plugin = plugins[-1]
        plugin.armed.set()
        change = repo.change("2.0.0", "Bump", ENVS)
        a.runtime.enqueue([f"{NS}.app-0"])
        assert plugin.paused.wait(10), "a's reconcile never reached the SCM"
        assert a.sharding is not None
        coordinator = a.sharding.coordinator
        lease_loop = Paused(coordinator.writer.kube)
        coordinator.writer.kube = lease_loop  # type: ignore[assignment]  # no renewal either
        b = cluster.sharded("b")
        assert b.sharding is not None
        wait_until(lambda: b.sharding.coordinator.held(), timeout=30, what="b to take over")
        plugin.resume.set()  # a wakes up, its reconcile goes on to open and merge at once
        wait_until(lambda: a.sharding.fence.refused > 0, what="a's write to be refused")
        assert coordinator.held(), "a learnt of the takeover from its lease loop, not its clock"
        lease_loop.resume.set()
        wait_until(lambda: promoted(cluster, "app-0", change), what="b to promote the change")
        assert merges(repo) == {"environment/dev": 1, "environment/staging": 1}
        wait_until(lambda: coordinator.transitions["lapsed"], what="a to see its hold lapsed")


def test_a_hold_that_lapsed_and_is_renewed_with_nobody_else_between_is_not_taken_over_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_cluster(tmp_path) as cluster:
        repo = fleet(cluster, tmp_path, 1)["app-0"]
        a = cluster.sharded("a")
        assert a.sharding is not None
        wait_until(lambda: settled(cluster, [a]), what="a to hold the shard")
        wait_until(lambda: promoted(cluster, "app-0", repo.tip("main")), what="app-0 read")
        taken: list[set[str]] = []
        monkeypatch.setattr(
            a.sharding, "take_over", lambda runtime, repos, **_: taken.append(repos)
        )
        coordinator = a.sharding.coordinator
        writes = Paused(coordinator.writer.kube)
        coordinator.writer.kube = writes  # type: ignore[assignment]  # renewals stall
        wait_until(lambda: not a.sharding.fence.held(), what="a's hold to lapse")
        writes.resume.set()
        wait_until(lambda: coordinator.transitions["lapsed"], what="a to see the lapse")
        wait_until(lambda: a.sharding.fence.held(), what="a to hold the shard again")
        assert taken == [], "a read its own shard afresh as if another replica had held it"
        assert coordinator.transitions["acquired"] == 1
