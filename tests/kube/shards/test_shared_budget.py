"""Replicas that share a credential keep its windowed limits in one log for the whole
group (a Lease): across a move of shards and a scale event, no replica waits while the
credential has room, and together they never spend more than it allows."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from promoter.http import ThreadServer, free_port
from promoter.kube.client.api import Kube
from promoter.kube.client.connect import loopback_client
from promoter.kube.shards.spending import SPENT_ANNOTATION, LeaseFleet, budget_lease
from scm_plugins.budget import Cost, CredentialBudget, Priority, Throttled
from scm_plugins.fleet import GRANT, Spent, Want
from scm_plugins.github.limits import GITHUB_LIMITS
from scm_plugins.local import LocalScm
from scm_plugins.protocol import ScmPlugin
from tests.kube.cluster import fake_cluster, wait_until
from tests.kube.fake_api import FakeKube
from tests.kube.shard_helpers import fleet, settled

HOUR = 60.0
LIMITS = replace(GITHUB_LIMITS, window=HOUR, max_wait=0.0)
"""GitHub's limits with an hour of a minute (so a minute of a second); no call waits in
its thread: it is admitted or ``Throttled``."""
PULL = Cost(priority=Priority.WRITE, points=5, content=True)
READ = Cost(priority=Priority.READ, points=1)


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Group:
    """Replicas' budgets of one credential, and the log they share over a real API."""

    fake: FakeKube
    kube: Kube
    clock: Clock

    def budget(self, share: float) -> tuple[CredentialBudget, LeaseFleet]:
        budget = CredentialBudget(LIMITS, clock=self.clock, wall=self.clock)
        log = LeaseFleet(
            self.kube,
            namespace="team",
            group="promoter",
            provider="github",
            watched=lambda name: None,  # no watch: each replica reads after a refusal
            timeout=5.0,
        )
        budget.spend_with(log)
        budget.share(share)
        return budget, log

    def spent(self) -> tuple[int, int, int]:
        lease = self.fake.get(
            "leases", "team", budget_lease("promoter", "github"), group="coordination.k8s.io"
        )
        annotations = (lease or {}).get("metadata", {}).get("annotations") or {}
        return Spent.parse(annotations.get(SPENT_ANNOTATION)).totals(self.clock.now, LIMITS)


@pytest.fixture
def group() -> Iterator[Group]:
    fake = FakeKube()
    port = free_port()
    server = ThreadServer(fake.app, port, name="fake-kube").start()
    kube = Kube(loopback_client(f"http://127.0.0.1:{port}"))
    try:
        yield Group(fake, kube, Clock())
    finally:
        fake.expire()
        server.stop(timeout=10)
        kube.client.close()


def pull(budget: CredentialBudget) -> bool:
    try:
        budget.admit(PULL).answered(201, {})
    except Throttled:
        return False
    return True


def test_a_replica_over_its_new_share_still_creates_content_while_the_credential_has_room(
    group: Group,
) -> None:
    (a, _), (b, _) = group.budget(0.5), group.budget(0.5)
    for _ in range(150):  # a busy shard: a spends 150 of the hour's 500
        assert pull(a)
        group.clock.now += 0.02
    for _ in range(120):
        assert pull(b)
        group.clock.now += 0.02
    a.share(0.2)  # a is killed and replaced, shards move: a's share is now 100, b's 400
    b.share(0.8)
    (c, _) = group.budget(0.3)  # and a new replica joins
    refused = []
    room = LIMITS.content_per_window - round(LIMITS.content_per_window * 0.05)  # merges' 25
    for n in range(room - 270):  # what writes may take of the hour: all of it
        budget = (a, b, c)[n % 3]
        if not pull(budget):
            refused.append((n % 3, group.spent()))
        group.clock.now += 0.05
    assert refused == [], "a replica waited while the credential had room"
    assert group.spent()[1] == room
    assert not pull(b) and not pull(c), "spent but for the merges' reserve"
    merge = Cost(priority=Priority.MERGE, points=5, content=True)
    a.admit(merge).answered(200, {})
    group.clock.now += HOUR * 1.06
    assert pull(a), "room again once the window moved on"


def test_together_replicas_never_spend_more_than_the_credential_allows(group: Group) -> None:
    budgets = [group.budget(share)[0] for share in (0.5, 0.3, 0.2)]
    made = 0
    while group.clock.now < 1_700_000_000.0 + HOUR * 0.9:
        for budget in budgets:
            made += pull(budget)
        group.clock.now += 0.01
        in_minute, _, _ = group.spent()
        assert in_minute <= LIMITS.content_per_minute
    assert made == LIMITS.content_per_window - round(LIMITS.content_per_window * 0.05)


def test_points_are_taken_a_grant_at_a_time_and_each_content_call_in_one_write(
    group: Group,
) -> None:
    budget, log = group.budget(1.0)
    for _ in range(GRANT * 3):
        budget.admit(READ).answered(200, {})
    assert log.writes == 3
    pull(budget)
    assert log.writes == 4
    assert group.spent()[2] == GRANT * 3 + PULL.points


def test_the_log_waits_for_the_oldest_entry_to_leave_the_window_and_keeps_the_reserve() -> None:
    limits = LIMITS
    spent = Spent()
    now = 1000.0
    for n in range(limits.content_per_minute):
        spent.add(now + n * 0.001, limits, content=1, points=0)
    pull = Want(content=1, points=0, reserve=0.0)
    assert spent.wait(pull, limits, now + 0.5) == pytest.approx(limits.minute * 1.05 - 0.5)
    merge_room = Want(content=1, points=0, reserve=0.0)
    write_room = Want(content=1, points=0, reserve=0.05)
    later = now + limits.minute * 1.05 + 0.1  # the whole minute gone: room for 80 again
    assert spent.wait(merge_room, limits, later) == 0.0
    for _ in range(76):  # 76 of 80: a write leaves 4 to the merges
        spent.add(later, limits, content=1, points=0)
    assert spent.wait(write_room, limits, later) > 0
    assert spent.wait(merge_room, limits, later) == 0.0
    assert Spent.parse("not json").content == []
    assert Spent.parse(spent.dump()).totals(later, limits) == spent.totals(later, limits)


class Budgeted:
    """The local SCM with a budget in its counted-call helper, as GitHub's plugin has."""

    def __init__(self, inner: ScmPlugin) -> None:
        self.inner = inner
        self.calls: Any = type("Calls", (), {})()
        self.calls.budget = CredentialBudget(LIMITS)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_sharded_replica_keeps_its_credentials_windows_with_the_group(tmp_path: Path) -> None:
    plugins: list[Budgeted] = []

    def budgeted(inner: ScmPlugin) -> ScmPlugin:
        assert isinstance(inner, LocalScm)
        plugins.append(Budgeted(inner))
        return plugins[-1]  # type: ignore[return-value]

    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 2)
        a = cluster.sharded("a", scm=budgeted)
        wait_until(lambda: settled(cluster, [a]), what="a to hold the shards")
        budget = plugins[-1].calls.budget
        wait_until(lambda: budget._fleet is not None, what="the group's log given to a")
        budget.admit(PULL).answered(201, {})
        name = budget_lease("promoter", "team.local")  # the provider's namespaced name
        lease = wait_until(
            lambda: cluster.fake.get("leases", "team", name, group="coordination.k8s.io"),
            what="the log's Lease",
        )
        annotations = lease["metadata"]["annotations"]
        assert len(Spent.parse(annotations[SPENT_ANNOTATION]).content) == 1
        assert lease["metadata"]["labels"]["promoter.argoproj.io/lease-group"] == "promoter"
