"""The processes of ``bench/shards.py``: the Kubernetes API stand-in and the replicas.

Replicas are started, stopped (SIGTERM, as Kubernetes does) and killed (SIGKILL) as
processes; what they hold is read as an operator would: the Leases from the API
server, ``/api/v1/shards`` from the replicas.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx
from common import ROOT, wait_for

from promoter.http import free_port
from scm_plugins.local.store import LocalStore

BENCH = Path(__file__).resolve().parent
TOKEN = "bench-peer-secret"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/bench/leases"
STRATEGIES = "/apis/promoter.argoproj.io/v1alpha1/namespaces/bench/promotionstrategies"


@contextmanager
def stand_in(root: Path, objects: list[dict[str, Any]]) -> Iterator[str]:
    """The Kubernetes API stand-in in a process of its own, preloaded; its URL."""
    preload = root / "objects.json"
    preload.write_text(json.dumps(objects))
    port = free_port()
    log = (root / "fake-api.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.kube.fake_api_server",
            "--port",
            str(port),
            "--preload",
            str(preload),
        ],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # a process group of its own, ended with it
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url + LEASES), timeout=60, what="the API stand-in")
        yield url
    finally:
        _end(proc)
        log.close()


def _end(proc: subprocess.Popen[bytes]) -> None:
    """End ``proc``'s process group: SIGTERM, then SIGKILL if it lingers (or is paused)."""
    for sig in (signal.SIGCONT, signal.SIGTERM):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


class Replica:
    def __init__(self, name: str, port: int, proc: subprocess.Popen[bytes]) -> None:
        self.name, self.port, self.proc = name, port, proc
        self.started = time.monotonic()
        self.member_seen: float | None = None

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.port}"


class Cluster:
    def __init__(self, root: Path, api: str, args: argparse.Namespace) -> None:
        self.root, self.api, self.args = root, api, args
        self.scm = root / "scm"
        self.scm.mkdir()
        self.audit = root / "audit.jsonl"
        self.logs = root / "logs"
        self.logs.mkdir()
        self.replicas: dict[str, Replica] = {}
        self.serving: set[str] = set()
        """The replicas a Service would send requests to: ready, not stopping."""
        self.timeline: list[tuple[float, str, str]] = []
        """(epoch seconds, started | ready | SIGTERM | stopped | SIGKILL, replica)"""
        self.cpu_samples: list[dict[str, Any]] = []
        self.store = LocalStore(self.scm / "local-scm.sqlite3")
        self.http = httpx.Client(timeout=10)
        self._n = 0

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        for replica in list(self.replicas.values()):
            with suppress(ProcessLookupError):
                os.killpg(replica.proc.pid, signal.SIGKILL)
            replica.proc.wait(30)
        self.http.close()

    # --- processes ---------------------------------------------------------------------

    def start(self) -> str:
        self._n += 1
        name, port = f"r{self._n}", free_port()
        a = self.args
        command = [
            sys.executable, str(BENCH / "shard_replica.py"), "--name", name, "--port", str(port),
            "--api", self.api, "--state", str(self.root / "state" / name), "--scm", str(self.scm),
            "--audit", str(self.audit), "--token", TOKEN, "--shards", str(a.shards),
            "--lease-duration", str(a.lease), "--renew-deadline", str(a.renew),
            "--retry-period", str(a.retry),
        ]  # fmt: skip
        log = (self.logs / f"{name}.log").open("w")
        proc = subprocess.Popen(
            command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.replicas[name] = Replica(name, port, proc)
        wait_for(lambda: _answers(f"http://127.0.0.1:{port}/healthz"), timeout=120, what=name)
        self.timeline.append((time.time(), "started", name))
        wait_for(lambda: _answers(f"http://127.0.0.1:{port}/readyz"), timeout=120, what=name)
        self.serving.add(name)  # a Service's endpoints: only once its readiness probe passes
        self.timeline.append((time.time(), "ready", name))
        return name

    def stop(self, name: str) -> None:
        """SIGTERM, as Kubernetes ends a pod; wait for the process to exit."""
        replica = self.replicas.pop(name)
        self.serving.discard(name)
        self.timeline.append((time.time(), "SIGTERM", name))
        replica.proc.send_signal(signal.SIGTERM)
        replica.proc.wait(120)
        self.timeline.append((time.time(), "stopped", name))

    def kill(self, name: str) -> None:
        replica = self.replicas.pop(name)
        self.serving.discard(name)
        self.timeline.append((time.time(), "SIGKILL", name))
        replica.proc.send_signal(signal.SIGKILL)
        replica.proc.wait(30)

    def live(self) -> list[str]:
        return list(self.replicas)

    def rss(self) -> dict[str, float]:
        found = {}
        for name, replica in self.replicas.items():
            for line in Path(f"/proc/{replica.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    found[name] = round(int(line.split()[1]) / 1024, 1)
        return found

    # --- reading the cluster -------------------------------------------------------------

    def table(self, name: str) -> dict[str, Any]:
        answer: dict[str, Any] = self.http.get(
            self.replicas[name].address + "/api/v1/shards"
        ).json()
        return answer

    def leases(self) -> dict[str, str]:
        items = self.http.get(self.api + LEASES).json()["items"]
        return {
            i["metadata"]["name"]: (i.get("spec") or {}).get("holderIdentity") or "" for i in items
        }

    def wait_settled(self, timeout: float = 240.0) -> dict[str, str]:
        """Until every live replica sees the same members and assignment, and the shard
        Leases name the assigned replicas: shard -> holder."""
        live = set(self.replicas)

        def check() -> dict[str, str] | None:
            leases = self.leases()
            now = time.monotonic()
            for name, replica in self.replicas.items():
                if replica.member_seen is None and leases.get(f"promoter-member-{name}"):
                    replica.member_seen = now
            try:
                tables = [self.table(name) for name in live]
            except (httpx.HTTPError, ValueError):
                return None
            first = {s["name"]: s["assigned"] for s in tables[0]["shards"]}
            for table in tables:
                if {m["identity"] for m in table["members"]} != live:
                    return None
                if {s["name"]: s["assigned"] for s in table["shards"]} != first:
                    return None
            holders = {s: leases.get(f"promoter-{s}", "") for s in first}
            return holders if holders == first else None

        settled: dict[str, str] = wait_for(
            check, timeout=timeout, what="the shards to settle", poll=0.1
        )
        return settled

    def joined_after(self, name: str) -> float:
        """Seconds from a replica's member Lease appearing to its share being held."""
        replica = self.replicas[name]
        return time.monotonic() - (replica.member_seen or replica.started)

    def repositories_moved(self, before: dict[str, str], after: dict[str, str]) -> int:
        shards = {s["name"]: s for s in self.table(self.live()[0])["shards"]}
        return sum(
            len(shards[s]["repositories"])
            for s in after
            if before.get(s) != after[s] and s in shards
        )

    def wait_reconciled(self, strategies: int, timeout: float = 900.0) -> None:
        """Until every strategy's status has been written once."""

        def count() -> bool:
            items = self.http.get(self.api + STRATEGIES, timeout=60).json()["items"]
            return (
                sum(1 for i in items if (i.get("status") or {}).get("environments")) >= strategies
            )

        wait_for(count, timeout=timeout, what="every strategy reconciled", poll=2.0)

    def _cpu(self, *, children: bool = False) -> dict[str, float]:
        """CPU seconds each replica has used so far (with ``children``: and the git
        processes it ran and waited for)."""
        tick = os.sysconf("SC_CLK_TCK")
        found = {}
        for name, replica in list(self.replicas.items()):
            try:
                stat = Path(f"/proc/{replica.proc.pid}/stat").read_text()
            except OSError:  # it has just exited
                continue
            fields = [int(f) for f in stat.rsplit(")", 1)[1].split()[11:15]]
            found[name] = sum(fields if children else fields[:2]) / tick
        return found

    def sample_cpu(self, stop: threading.Event, every: float = 1.0) -> list[dict[str, Any]]:
        """CPU seconds of each replica (its git children included), every ``every``
        seconds until ``stop``: where a rolling restart's CPU goes."""
        samples = []
        while not stop.wait(every):
            samples.append({"at": time.time(), "cpu": self._cpu(children=True)})
        return samples

    def api_load(self, seconds: float = 10.0) -> dict[str, Any]:
        first = self.http.get(self.api + "/debug/counts").json()
        cpu = self._cpu()
        time.sleep(seconds)  # a sampling window, not a wait for something
        second = self.http.get(self.api + "/debug/counts").json()
        used = self._cpu()

        def rate(get: Any) -> float:
            return round((get(second) - get(first)) / seconds, 1)

        return {
            "requests_per_s": rate(lambda c: c["requests"]),
            "lease_writes_per_s": rate(lambda c: c["writes"].get("leases", 0)),
            "status_writes_per_s": rate(lambda c: c["writes"].get("promotionstrategies/status", 0)),
            "watches_started_per_s": rate(lambda c: c["watches"]),
            "cpu_percent": {
                name: round((used[name] - cpu[name]) / seconds * 100, 1) for name in used
            },
        }

    def forward_delays(self) -> dict[str, Any]:
        """``promoter_forward_seconds`` summed over the live replicas: how long keys took
        from the replica a webhook reached to the owner's queue."""
        buckets: dict[float, float] = {}
        for name in self.live():
            try:  # /metrics computes DORA figures over git: slow on a loaded machine
                text = self.http.get(self.replicas[name].address + "/metrics", timeout=180).text
            except httpx.HTTPError:
                return {"forwarded": None, "unanswered": name}
            for line in text.splitlines():
                if line.startswith("promoter_forward_seconds_bucket"):
                    le = line.split('le="', 1)[1].split('"', 1)[0]
                    bound = float("inf") if le == "+Inf" else float(le)
                    buckets[bound] = buckets.get(bound, 0.0) + float(line.rsplit(" ", 1)[1])
        total = buckets.get(float("inf"), 0.0)
        if not total:
            return {"forwarded": 0}

        def quantile(q: float) -> float:
            return next(b for b in sorted(buckets) if buckets[b] >= q * total)

        return {
            "forwarded": int(total),
            "p50_at_most_ms": quantile(0.5) * 1000,
            "p99_at_most_ms": quantile(0.99) * 1000,
            "within_50ms": round(buckets.get(0.05, 0.0) / total, 3),
        }

    # --- acting through any replica ----------------------------------------------------

    def post_any(
        self, path: str, body: dict[str, Any], timeout: float = 60.0
    ) -> list[tuple[str, str, float]]:
        """POST to a random ready replica, as through a Service; again elsewhere while
        refused (503) or closed. Each try, as ``(replica, its answer or error, seconds
        it took)``."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        tries: list[tuple[str, str, float]] = []
        while True:
            names = sorted(self.serving) or self.live()
            name = random.choice(names)
            started = time.monotonic()
            try:
                answer = self.http.post(self.replicas[name].address + path, json=body)
                tries.append((name, str(answer.status_code), round(time.monotonic() - started, 3)))
                if answer.status_code in (201, 202):
                    return tries
                last = f"{answer.status_code} from {name}: {answer.text[:200]}"
            except (httpx.HTTPError, KeyError) as exc:
                tries.append((name, type(exc).__name__, round(time.monotonic() - started, 3)))
                last = f"{type(exc).__name__} from {name}"
            if time.monotonic() > deadline:
                raise TimeoutError(f"POST {path} was never accepted; last: {last}")
            time.sleep(0.1)  # a client's retry interval
