"""What a replica passes on when it hands shards over: the work webhooks and people
queued (read first by the next owner), in their order, and all of it before it stops;
not its background reads, which the next owner's take-over makes anyway."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from promoter.config import Config
from promoter.daemon import WorkQueue
from promoter.kube.client.api import Kube
from promoter.kube.client.connect import CONNECTIONS, loopback_client
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.resources.refresh import RefreshForwarder
from promoter.kube.resources.specs import REFRESH_ANNOTATION
from promoter.kube.runtime.mode import Replica
from promoter.kube.runtime.runtime import ClusterRuntime
from promoter.kube.shards.mode import ShardedMode
from promoter.kube.shards.settings import ShardSettings
from tests.kube.cluster import NS, fake_cluster, wait_until
from tests.kube.shard_helpers import fleet, settled


class SlowKube:
    """Records annotations; the first one waits until ``release`` is set."""

    def __init__(self) -> None:
        self.annotated: list[str] = []
        self.release = threading.Event()
        self.started = threading.Event()

    def annotate(self, plural: str, namespace: str, name: str, annotations: dict[str, str]) -> Any:
        self.started.set()
        self.release.wait(5)
        self.annotated.append(f"{namespace}.{name}")
        return {}


def test_the_forwarder_keeps_the_order_it_is_given_and_annotates_everything_before_it_stops() -> (
    None
):
    kube = SlowKube()
    forwarder = RefreshForwarder(cast(Kube, kube))
    forwarder.start()
    forwarder.forward(["team.zeta", "team.alpha"])
    assert kube.started.wait(30)
    forwarder.forward(["team.mid", "team.alpha"])  # given while the first batch is written
    stopping = threading.Thread(target=forwarder.stop)
    stopping.start()
    kube.release.set()
    stopping.join(10)
    assert kube.annotated == ["team.zeta", "team.alpha", "team.mid", "team.alpha"]


def test_flush_waits_until_every_key_given_is_annotated() -> None:
    kube = SlowKube()
    forwarder = RefreshForwarder(cast(Kube, kube))
    forwarder.start()
    try:
        assert forwarder.flush(0)  # nothing given: nothing to wait for
        forwarder.forward(["team.a"])
        assert not forwarder.flush(0.1)  # the API server has not answered yet
        kube.release.set()
        assert forwarder.flush(5)
        assert kube.annotated == ["team.a"]
    finally:
        kube.release.set()
        forwarder.stop()


def config(strategies: dict[str, str]) -> Config:
    """Strategy -> its repository, on the local SCM."""
    repos = sorted(set(strategies.values()))
    return Config.model_validate(
        {
            "scmProviders": [{"name": "local", "local": {}}],
            "repositories": [
                {"name": r, "url": f"/srv/{r}.git", "scmProvider": "local"} for r in repos
            ],
            "promotionStrategies": [
                {"name": s, "repository": r, "environments": [{"branch": "environment/dev"}]}
                for s, r in strategies.items()
            ],
        }
    )


class RecordingRuntime:
    """A ``RuntimePort`` that keeps what the sharded mode asks of it."""

    def __init__(self, cfg: Config, queue: WorkQueue | None = None) -> None:
        self.config = cfg
        self.queue = queue or WorkQueue()
        self.enqueued: list[list[str]] = []
        self.forgotten: list[list[str]] = []
        self.ahead: list[list[str]] = []

    def urgent(self) -> list[str]:
        return self.queue.urgent()

    def enqueue(self, keys: Iterable[str]) -> None:
        self.enqueued.append(list(keys))

    def spread(self, keys: list[str], over: float) -> None:
        self.queue.add_spread(keys, over)

    def unsettle(self, keys: Iterable[str]) -> None:
        return None

    def forget_repositories(self, repositories: set[str]) -> None:
        self.forgotten.append(sorted(repositories))

    def refresh_ahead(self, repositories: list[str]) -> None:
        self.ahead.append(list(repositories))

    def fetch(self, repository: str) -> None:
        return None

    def let_go(self, repositories: list[str], strategies: list[str]) -> None:
        return None

    def share_budgets(self, shares: Mapping[str, float], fleets: Mapping[str, Any]) -> None:
        return None


def alone(cfg: Config, forwarded: list[list[str]] | None = None) -> ShardedMode:
    """A replica's sharded mode with no API server behind it (nothing is started); the
    keys it hands over through their annotation go to ``forwarded``."""
    lease = LeaseSettings(namespace="ns", lease_duration=5, renew_deadline=3, retry_period=1)
    sent = forwarded if forwarded is not None else []
    replica = SimpleNamespace(
        assembled=SimpleNamespace(config=cfg),
        forwarder=SimpleNamespace(forward=sent.append),
        signal=lambda: None,
        strategy_objects=lambda: [],
    )
    return ShardedMode(
        Kube(loopback_client("http://127.0.0.1:9")),
        lease,
        ShardSettings(count=64),
        "me",
        replica=cast(Replica, replica),
        leading=lambda: False,
    )


def test_a_shard_handed_over_passes_on_its_webhooks_work_not_its_background_reads() -> None:
    cfg = config({"web": "r1", "resync": "r1", "other": "r2", "elsewhere": "r3"})
    forwarded: list[list[str]] = []
    sharding = alone(cfg, forwarded)
    assert sharding.shard_of("r1") != sharding.shard_of("r3")
    queue = WorkQueue()
    queue.add_many(["resync", "elsewhere", "web"])  # the resync's reads, then a webhook's
    queue.hurry(["web", "elsewhere"])
    runtime = RecordingRuntime(cfg, queue)
    sharding.moves.revoked(sharding.shard_of("r1"))  # r1's shard is being handed over
    gained = sharding.follow(runtime)
    assert not gained
    assert forwarded == [["web"]]  # not "resync" (read anyway), not r3's (still ours)
    sharding.follow(runtime)
    assert forwarded == [["web"]]  # handed over once


def test_the_api_client_keeps_a_connection_for_each_writer_and_watch() -> None:
    client = loopback_client("http://127.0.0.1:9")
    assert client.rest_client.pool_manager.connection_pool_kw["maxsize"] == CONNECTIONS >= 5 + 8 + 4


def test_a_stopping_replica_annotates_its_webhooks_work_before_it_releases_its_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 4)
        a, b = (
            cluster.sharded(n, lease_duration=2.0, renew_deadline=1.2, retry_period=0.2)
            for n in ("a", "b")
        )
        wait_until(lambda: settled(cluster, [a, b]), what="a and b to settle")
        theirs = [
            f"{NS}.app-{n}" for n in range(4) if b.sharding and b.sharding.mine(f"{NS}.app-{n}")
        ]
        assert theirs, "b holds no strategy"
        writes: list[tuple[str, str, str]] = []  # (plural, name, what was written), in order
        write = cluster.fake._write

        def recorded(resource: Any, key: Any, new: Any, sub: str) -> Any:
            done = write(resource, key, new, sub)
            if resource[1] == "leases":
                writes.append(
                    ("leases", key[2], (done.get("spec") or {}).get("holderIdentity", ""))
                )
            elif REFRESH_ANNOTATION in (done["metadata"].get("annotations") or {}):
                writes.append((resource[1], key[2], "annotated"))
            return done

        monkeypatch.setattr(cluster.fake, "_write", recorded)
        # a status a webhook brought for theirs[0] waits in b's queue when SIGTERM comes
        monkeypatch.setattr(b.runtime.queue, "urgent", lambda: [theirs[0]])
        b.stop()
        name = theirs[0].split(".", 1)[1]
        annotated = [
            i for i, w in enumerate(writes) if w == ("promotionstrategies", name, "annotated")
        ]
        released = [
            i for i, w in enumerate(writes) if w[0] == "leases" and "shard" in w[1] and w[2] == ""
        ]
        assert annotated and released, writes
        assert annotated[0] < min(released), writes


def test_a_take_over_refreshes_its_mirrors_ahead_the_urgent_strategies_repositories_first() -> None:
    cfg = config({"a": "r1", "b": "r2", "web": "r3", "c": "r3", "kept": "r4"})
    sharding = alone(cfg)
    runtime = RecordingRuntime(cfg)
    sharding.take_over(runtime, {"r1", "r2", "r3"}, urgent={"web"}, at_rest={"b"})
    assert runtime.ahead == [["r3", "r1", "r2"]]  # not r4: still another replica's
    assert runtime.forgotten == [["r1", "r2", "r3"]]
    assert runtime.enqueued == [["web"]]


def test_a_key_found_not_ours_is_passed_on_only_when_a_webhook_or_a_person_brought_it(
    tmp_path: Path,
) -> None:
    """A background read (a resync's, a take-over's) of a strategy whose shard moved is
    dropped: the owner's take-over reads it, and a key passed on runs first there."""
    cfg = config({"web": "r1", "resync": "r1", "timer": "r1"})
    cfg = cfg.model_copy(
        update={"daemon": cfg.daemon.model_copy(update={"state_dir": str(tmp_path)})}
    )
    forwarded: list[list[str]] = []
    runtime = ClusterRuntime(
        cfg,
        plugins={},
        observers=[],
        mine=lambda key: False,  # every shard moved away meanwhile
        forward=lambda keys, wake: forwarded.append(keys),
        reconciled=lambda key, view: None,
    )
    try:
        runtime.queue.add_many(["resync", "web", "timer"])
        runtime.queue.hurry(["web"])
        for _ in range(3):
            key = runtime.queue.get(0)
            assert key is not None
            runtime.workers.process(key)
            runtime.queue.done(key)
        assert forwarded == [["web"]]
    finally:
        runtime.close()
