"""At SIGTERM a sharded replica hands its shards over while it still answers: writes for
them, posted to it or passed to it by another replica, are answered by the next owner,
not refused by a closed port; then it shuts down."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from promoter.cli.sandbox import GitOpsRepo
from promoter.http import free_port
from promoter.kube.serving import ReplicaServer
from promoter.kube.shards import routes
from tests import processes
from tests.kube.cluster import NS, PEER_TOKEN, fake_cluster, local_objects, wait_until
from tests.kube.shard_helpers import holders, leased
from tests.kube.shards.test_shard_forwarding import JSON, statuses_of, two_replicas

IN_FLIGHT = 0.6
"""Seconds a write of the stopping replica is in flight after the SIGTERM (a merge)."""


def test_writes_reaching_a_replica_that_leaves_are_answered_by_the_next_owner(
    tmp_path: Path,
) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        repo, sha, to_a = statuses_of(cluster, a, strategy, via="a")
        to_b = to_a.replace(cluster.addresses["a"], cluster.addresses["b"])
        assert a.sharding is not None
        fence = a.sharding.fence
        merging = threading.Event()

        def merge_in_flight() -> None:  # holds the shard's release until it ends
            with fence.writing(repo):
                merging.set()
                time.sleep(IN_FLIGHT)

        writer = threading.Thread(target=merge_in_flight)
        writer.start()
        assert merging.wait(30)
        server = cluster.servers["a"]
        assert isinstance(server.server, ReplicaServer)
        sigterm = time.monotonic()
        server.server.handle_exit(signal.SIGTERM, None)
        wait_until(
            lambda: fence.in_flight(a.sharding.shard_of(repo)) and not fence.claims(repo),
            what="a's shard revoked, its write still in flight",
        )
        answers = []
        for url in (to_a, to_b):
            body = {"key": "ci", "phase": "success", "force": True}
            answers.append(httpx.post(url, json=body, headers=JSON, timeout=10))
        writer.join()
        for answer in answers:
            assert answer.status_code == 201, answer.text
            assert answer.json()["enqueued"] == [f"{NS}.{strategy}"]
        wait_until(  # read again from the SCM by b's take-over, if it came after
            lambda: [s.key for s in b.runtime.status_cache.get(repo, sha) or []] == ["ci"],
            what="the status in b's cache",
        )
        wait_until(lambda: leased(cluster, [b]), what="every shard held by b")
        handed = time.monotonic() - sigterm
        wait_until(lambda: not server.alive(), timeout=30, what="a's server to shut down")
        assert server.server.started and a.sharding.coordinator.held() == set()
        print(f"a left in {handed:.2f}s, its write in flight {IN_FLIGHT}s")
        assert handed >= IN_FLIGHT  # the hand-over waited for the write in flight to end


def test_a_second_sigterm_shuts_down_at_once(tmp_path: Path) -> None:
    with fake_cluster(tmp_path) as cluster:
        a, _, strategy = two_replicas(cluster, tmp_path)
        repo, _, _ = statuses_of(cluster, a, strategy, via="a")
        assert a.sharding is not None
        fence = a.sharding.fence
        writing, release = threading.Event(), threading.Event()

        def stuck_merge() -> None:
            with fence.writing(repo):
                writing.set()
                release.wait(600)  # until released: the write ends only when the test says

        writer = threading.Thread(target=stuck_merge)
        writer.start()
        try:
            assert writing.wait(60)  # in flight before the SIGTERM, however slow the start
            server = cluster.servers["a"].server
            server.handle_exit(signal.SIGTERM, None)
            time.sleep(0.2)
            assert not server.should_exit  # leaving: its write has not ended
            server.handle_exit(signal.SIGTERM, None)
            assert server.should_exit
        finally:
            release.set()
            writer.join()


def test_a_write_passed_to_a_replica_that_died_waits_for_the_next_owner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed, a replica holds its shards until their Leases lapse, and its port is
    closed: a write another replica passes to it reaches nobody (nothing was sent), so
    that replica waits for the next owner, up to ``MOVE_WAIT`` (here longer than the
    Leases take to lapse, however loaded the machine), instead of a 503."""
    monkeypatch.setattr(routes, "MOVE_WAIT", 120.0)
    with fake_cluster(tmp_path) as cluster:
        a, b, strategy = two_replicas(cluster, tmp_path)
        repo, sha, to_b = statuses_of(cluster, a, strategy, via="b")
        cluster.crash(a)
        killed = time.monotonic()
        body = {"key": "ci", "phase": "success", "force": True}
        answer = httpx.post(to_b, json=body, headers=JSON, timeout=180)
        took = time.monotonic() - killed
        assert answer.status_code == 201, answer.text
        assert answer.json()["enqueued"] == [f"{NS}.{strategy}"]
        wait_until(  # read again from the SCM by b's take-over, if it came after
            lambda: [s.key for s in b.runtime.status_cache.get(repo, sha) or []] == ["ci"],
            what="the status in b's cache",
        )
        print(f"answered by the next owner {took:.2f}s after the kill")


def test_promoter_serve_sharded_leaves_at_sigterm_then_exits_0(tmp_path: Path) -> None:
    """``promoter serve --kubernetes --shards`` as a process, sent SIGTERM as Kubernetes
    ends a pod: it hands its shards over (every shard Lease released, no holder named)
    before uvicorn shuts down, deletes its member Lease and exits 0."""
    with fake_cluster(tmp_path) as cluster:
        repo = GitOpsRepo.create(tmp_path / "gitops", ["dev", "staging"])
        local_objects(cluster, repo.path)
        port = free_port()
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(KUBECONFIG.format(url=cluster.url))
        config = tmp_path / "promoter.yaml"
        config.write_text(f"daemon: {{stateDir: '{tmp_path / 'state'}', port: {port}}}\n")
        command = [
            str(Path(sys.executable).parent / "promoter"),
            "serve",
            "--kubernetes",
            "--config",
        ]
        command += [str(config), "--kubeconfig", str(kubeconfig), "--namespace", NS]
        command += ["--identity", "r1", "--shards", "4", "--lease-duration", "2"]
        command += ["--renew-deadline", "1.5", "--retry-period", "0.2"]
        command += ["--advertise-address", f"http://127.0.0.1:{port}"]
        env = {**os.environ, "PROMOTER_PEER_TOKEN": PEER_TOKEN}
        with (tmp_path / "r1.log").open("w+") as log:
            proc = processes.start(command, stdout=log, stderr=subprocess.STDOUT, env=env)
            try:
                wait_until(
                    lambda: set(holders(cluster).values()) == {"r1"},
                    timeout=60,
                    what="r1's shards",
                )
                proc.send_signal(signal.SIGTERM)
                assert proc.wait(timeout=60) == 0
            finally:
                processes.end(proc)
            log.seek(0)
            said = [json.loads(line)["msg"] for line in log if line.startswith("{")]
        assert set(holders(cluster).values()) == {""}  # released, none left to lapse
        roles = [
            (lease["metadata"].get("labels") or {}).get("promoter.argoproj.io/lease-role")
            for lease in cluster.fake.items("leases")
        ]
        assert "shard" in roles and "member" not in roles  # its member Lease deleted
        left = said.index("left the shard group")
        assert said.index("SIGTERM: leaving the shard group before shutting down") < left
        assert left < said.index("Waiting for application shutdown.")


KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{{name: stand-in, cluster: {{server: '{url}'}}}}]
users: [{{name: nobody, user: {{token: none}}}}]
contexts: [{{name: stand-in, context: {{cluster: stand-in, user: nobody}}}}]
current-context: stand-in
"""
