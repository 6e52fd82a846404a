"""Test set-up for cluster mode: the fake API server on 127.0.0.1 and replicas that use it."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promoter.config import Config, ScmProvider
from promoter.http import ThreadServer, free_port
from promoter.kube.app import ReplicaApp
from promoter.kube.client.api import Kube
from promoter.kube.client.connect import loopback_client
from promoter.kube.controller import Controller, KubeSettings
from promoter.kube.leadership.elector import LeaseSettings
from promoter.kube.serving import ReplicaServer
from promoter.kube.shards.settings import ShardSettings
from scm_plugins.local import LocalScm
from scm_plugins.protocol import ScmPlugin
from tests.kube.fake_api import FakeKube
from tests.support import WAIT

GROUP = "promoter.argoproj.io"
NS = "team"
FAST_LEASE = {"lease_duration": 6.0, "renew_deadline": 4.0, "retry_period": 0.1}
"""The replicas' Leases unless a test says otherwise: rounds every 0.1 s, and a deadline
that no stall of a machine shared with other work (seconds, under load) lets lapse, so a
hold lapses only where a test makes it (a paused lease loop, a crash)."""
PEER_TOKEN = "peer-secret-for-tests"


@dataclass
class Cluster:
    """A fake Kubernetes API over real HTTP, and the replicas started on it."""

    fake: FakeKube
    url: str
    root: Path
    replicas: list[Controller] = field(default_factory=list)
    servers: dict[str, ThreadServer] = field(default_factory=dict)
    addresses: dict[str, str] = field(default_factory=dict)

    def kube(self) -> Kube:
        return Kube(loopback_client(self.url))

    def create(self, plural: str, name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
        kind = {"promotionstrategies": "PromotionStrategy", "gitrepositories": "GitRepository"}
        kind |= {"scmproviders": "ScmProvider", "commitstatuses": "CommitStatus"}
        body = {
            "apiVersion": f"{GROUP}/v1alpha1",
            "kind": kind[plural],
            "metadata": {"name": name, "namespace": NS, **meta},
            "spec": spec,
        }
        created: dict[str, Any] = self.kube().custom.create_namespaced_custom_object(
            GROUP, "v1alpha1", NS, plural, body
        )
        return created

    def patch_spec(self, plural: str, name: str, spec: dict[str, Any]) -> None:
        self.kube().custom.patch_namespaced_custom_object(
            GROUP, "v1alpha1", NS, plural, name, [{"op": "add", "path": "/spec", "value": spec}]
        )

    def secret(self, name: str, data: dict[str, str]) -> None:
        from kubernetes import client as k8s

        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        body = k8s.V1Secret(metadata=k8s.V1ObjectMeta(name=name), data=encoded)
        self.kube().core.create_namespaced_secret(NS, body)

    def status(self, plural: str, name: str) -> dict[str, Any]:
        obj = self.fake.get(plural, NS, name) or {}
        return dict(obj.get("status") or {})

    def sharded(
        self,
        name: str,
        *,
        count: int = 16,
        base: Config | None = None,
        scm: Callable[[ScmPlugin], ScmPlugin] = lambda plugin: plugin,
        **lease: float,
    ) -> Controller:
        """A sharded replica served over HTTP on 127.0.0.1 (started by its app's lifespan);
        ``scm`` wraps its SCM plugin (to pause it in a test)."""
        port = free_port()
        address = f"http://127.0.0.1:{port}"
        shards = ShardSettings(count=count, address=address, peer_token=PEER_TOKEN)
        controller = self.replica(name, base=base, shards=shards, scm=scm, **lease)
        self.servers[name] = ThreadServer(
            ReplicaApp(controller),
            port,
            name=f"replica-{name}",
            server=lambda config: ReplicaServer(config, controller),
        )
        self.servers[name].start()
        self.addresses[name] = address
        return controller

    def crash(self, controller: Controller) -> None:
        """Stop a replica as a kill would: its Leases are left to expire, its port closes."""
        controller.stop(release=False)
        server = self.servers.pop(controller.settings.identity, None)
        if server is not None:
            server.stop(timeout=10)

    def replica(
        self,
        name: str,
        *,
        base: Config | None = None,
        shards: ShardSettings | None = None,
        scm: Callable[[ScmPlugin], ScmPlugin] = lambda plugin: plugin,
        **lease: float,
    ) -> Controller:
        """A replica with its own state dir; every replica shares one local SCM database
        (wrapped by ``scm``)."""
        shared = self.root / "scm"
        base = base or Config()
        daemon = base.daemon.model_copy(
            update={
                "state_dir": str(self.root / name),
                "poll_interval": 0.1,
                "resync_interval": 30.0,
                "workers": 2,
            }
        )

        def local(provider: ScmProvider, state_dir: str) -> ScmPlugin:
            return scm(LocalScm(provider=provider, state_dir=str(shared)))

        settings = KubeSettings(
            namespace=NS,
            lease=LeaseSettings(namespace=NS, **{**FAST_LEASE, **lease}),
            identity=name,
            watch_timeout=5,
            plugin_factory=local,
            shards=shards,
        )
        controller = Controller(self.kube(), base.model_copy(update={"daemon": daemon}), settings)
        self.replicas.append(controller)
        return controller


@contextmanager
def fake_cluster(root: Path) -> Iterator[Cluster]:
    fake = FakeKube()
    port = free_port()
    server = ThreadServer(fake.app, port, name="fake-kube").start()
    cluster = Cluster(fake, f"http://127.0.0.1:{port}", root)
    try:
        yield cluster
    finally:
        for replica in cluster.replicas:
            replica.stop()
        for replica_server in cluster.servers.values():
            replica_server.stop(timeout=10)
        fake.expire()  # ends open watches so that the server stops at once
        server.stop(timeout=10)


def local_objects(cluster: Cluster, repo: Path, *, gates: bool = False) -> None:
    """ScmProvider local, GitRepository gitops, PromotionStrategy guestbook (dev, staging)."""
    cluster.create("scmproviders", "local", {"local": {}})
    cluster.create(
        "gitrepositories", "gitops", {"url": str(repo), "scmProviderRef": {"name": "local"}}
    )
    spec: dict[str, Any] = {
        "gitRepositoryRef": {"name": "gitops"},
        "environments": [{"branch": "environment/dev"}, {"branch": "environment/staging"}],
    }
    if gates:
        spec["proposedCommitStatuses"] = [{"key": "ci"}]
    cluster.create("promotionstrategies", "guestbook", spec)


def wait_until(check: Any, *, timeout: float = WAIT, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
