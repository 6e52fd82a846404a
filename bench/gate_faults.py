"""Gate faults: an unrelated strategy's gate-to-merge latency while gate backends hang.

One daemon under uvicorn on 127.0.0.1, the local SCM and real bare repositories. The
``unrelated`` strategy has one environment gated by ``ci`` and by an HTTP check of its
own, on the daemon's pool of gate workers like every other (its endpoint always answers).
Each of the ``hanging`` strategies has dev, then staging gated by an HTTP check; their
staging PRs wait on the check all along, asked every 0.2 s. A check's endpoint (a server
on 127.0.0.1) answers at once while healthy, and holds every request without answering
while it hangs (the check's timeout is ``--timeout``, 5 s by default).

Two cases, one daemon each, in one run: ``--hanging`` strategies (4) whose checks share
one host, so one backend and its bound on calls in flight; and ``--hosts`` strategies (10,
more than the 8 gate workers) each on a host of its own (a port: a backend each), which
no bound per backend holds: when each waiting check held a gate worker, the unrelated
strategy's check waited behind them for a timeout or more.

Side by side in one run, the promotions alternate between the endpoint healthy and the
endpoint hanging; for each, the latency is the time from posting ``ci`` on the
unrelated strategy's PR to its ``merged`` event, and, while it hangs, the same for a
hanging strategy's own dev (an environment without that gate). Before the gate backends
ran outside the reconcile, each reconcile of a hanging strategy waited on the check,
so with more of them than workers every strategy waited.

    python bench/gate_faults.py [--promotions 20] [--hanging 4] [--hosts 10] [--timeout 5]

Target: in both cases, with the backends hanging, the unrelated strategy's p50 <= 2x its
healthy p50.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import common

from promoter.http import free_port

DEV, STAGING = "environment/dev", "environment/staging"
WAIT = 60.0


class Endpoint:
    """An HTTP check's endpoint: ``verdict`` while healthy; holds requests while it hangs."""

    def __init__(self, verdict: str = "pending") -> None:
        self.healthy = threading.Event()
        self.healthy.set()
        self.held = 0
        lock = threading.Lock()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with lock:
                    endpoint.held += 1
                try:
                    while not endpoint.healthy.wait(0.5):
                        if endpoint.closed:
                            return
                finally:
                    with lock:
                        endpoint.held -= 1
                body = json.dumps({"verdict": verdict}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):  # the check gave up meanwhile
                    self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self.closed = False
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        self.healthy.set()
        self.server.shutdown()


class Merges:
    """The daemon's ``merged`` events by (strategy, environment), time-stamped."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.seen: list[tuple[float, str, str]] = []

    def __call__(self, event: Any) -> None:
        if event.kind == "merged":
            with self._cond:
                self.seen.append((time.perf_counter(), event.strategy, event.environment))
                self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self.seen)

    def wait(self, strategy: str, environment: str, after: int) -> float:
        deadline = time.monotonic() + WAIT
        with self._cond:
            while True:
                for at, s, e in self.seen[after:]:
                    if (s, e) == (strategy, environment):
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{strategy} {environment} not merged in {WAIT:.0f}s")
                self._cond.wait(left)


def gate(url: str, timeout: float) -> str:
    return (
        f"gates: [{{name: smoke, http: {{url: '{url}/verify/{{sha}}', expression: verdict,"
        f" interval: 0.2s, timeout: {timeout}s}}}}]"
    )


def config_text(base: Path, urls: list[str], own: str, timeout: float, port: int) -> str:
    hanging = len(urls)
    repos = "".join(
        f"\n  - {{name: hanging{i}, url: {base / f'hanging{i}' / 'gitops.git'},"
        " scmProvider: local}"
        for i in range(hanging)
    )
    strategies = "".join(
        f"""
  - name: hanging{i}
    repository: hanging{i}
    proposedCommitStatuses: [{{key: ci}}]
    environments: [{{branch: {DEV}}}, {{branch: {STAGING}, {gate(urls[i], timeout)}}}]"""
        for i in range(hanging)
    )
    return f"""
scmProviders: [{{name: local, local: {{}}}}]
repositories:
  - {{name: unrelated, url: {base / "unrelated" / "gitops.git"}, scmProvider: local}}{repos}
promotionStrategies:
  - name: unrelated
    repository: unrelated
    proposedCommitStatuses: [{{key: ci}}]
    environments: [{{branch: {DEV}, {gate(own, timeout)}}}]{strategies}
daemon:
  stateDir: {base / "state"}
  host: 127.0.0.1
  port: {port}
  pollInterval: 0.05s
  resyncInterval: 5m
  workers: 2
"""


class Endpoints:
    """The hanging strategies' endpoints: one for all, or one each; healed and hung
    together."""

    def __init__(self, count: int) -> None:
        self.all = [Endpoint() for _ in range(count)]
        self.healthy = self

    @property
    def held(self) -> int:
        return sum(e.held for e in self.all)

    def set(self) -> None:
        for e in self.all:
            e.healthy.set()

    def clear(self) -> None:
        for e in self.all:
            e.healthy.clear()

    def close(self) -> None:
        for e in self.all:
            e.close()


@contextmanager
def started(
    args: argparse.Namespace, base: Path, hanging: int, hosts: int
) -> Iterator[tuple[Any, Any, Endpoints, Merges, Any]]:
    import httpx

    from promoter.cli.sandbox import GitOpsRepo
    from promoter.config.loader import parse_config
    from promoter.wiring import Daemon

    repos = {"unrelated": GitOpsRepo.create(base / "unrelated", [DEV])}
    for i in range(hanging):
        repos[f"hanging{i}"] = GitOpsRepo.create(base / f"hanging{i}", [DEV, STAGING])
    endpoint, own, merges, port = Endpoints(hosts), Endpoint("success"), Merges(), free_port()
    urls = [endpoint.all[i % hosts].url for i in range(hanging)]
    text = config_text(base, urls, own.url, args.timeout, port)
    daemon = Daemon(parse_config(text), observers=[merges])
    stop = common.serve(daemon.app, port)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=WAIT)
    try:
        yield repos, http, endpoint, merges, daemon.runtime.queue
    finally:
        http.close()
        endpoint.close()
        own.close()
        stop()


def view(http: Any, strategy: str, branch: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        e
        for e in http.get(f"/api/v1/strategies/{strategy}").json()["environments"]
        if e["branch"] == branch
    )
    return found


def proposed(http: Any, strategy: str, branch: str, dry: str) -> str:
    def found() -> str | None:
        env = view(http, strategy, branch)
        ready = env.get("pullRequest") and (env.get("proposed") or {}).get("drySha") == dry
        return str(env["proposed"]["hydratedSha"]) if ready else None

    try:
        return common.wait_for(found, timeout=WAIT, what=f"{strategy} {branch} PR")
    except TimeoutError as exc:  # say what the daemon shows instead
        env = view(http, strategy, branch)
        shown = {k: env.get(k) for k in ("state", "reason", "error", "pullRequest", "proposed")}
        raise TimeoutError(f"{exc}; the daemon shows {json.dumps(shown)[:1500]}") from None


def ci(http: Any, strategy: str, sha: str) -> None:
    answer = http.post(
        f"/api/v1/repositories/{strategy}/commits/{sha}/statuses",
        json={"key": "ci", "phase": "success"},
    )
    if answer.status_code != 201:
        raise RuntimeError(f"status refused: {answer.status_code} {answer.text}")


def change(repos: dict[str, Any], strategy: str, n: int) -> str:
    branches = [DEV] if strategy == "unrelated" else [DEV, STAGING]
    return str(repos[strategy].change(f"1.{n}.0", f"{strategy} 1.{n}.0", branches))


def promote(http: Any, merges: Merges, strategy: str, dry: str) -> float:
    """Change ``dry`` of ``strategy`` into dev: seconds from posting ``ci`` to the merge."""
    head = proposed(http, strategy, DEV, dry)
    mark = merges.mark()
    sent = time.perf_counter()
    ci(http, strategy, head)
    return merges.wait(strategy, DEV, mark) - sent


def run(args: argparse.Namespace, hanging_count: int, hosts: int) -> dict[str, Any]:
    """One case: ``hanging_count`` strategies whose checks hang, on ``hosts`` hosts."""
    common.quiet_logs()
    healthy: list[float] = []
    hanging: list[float] = []
    own_dev: list[float] = []
    versions = iter(range(2, 10_000))
    with (
        tempfile.TemporaryDirectory(prefix="bench-gate-faults-") as tmp,
        started(args, Path(tmp), hanging_count, hosts) as (repos, http, endpoint, merges, queue),
    ):
        common.wait_for(
            lambda: view(http, "unrelated", DEV).get("state") == "up-to-date",
            timeout=WAIT,
            what="the daemon",
        )
        names = [f"hanging{i}" for i in range(hanging_count)]
        for name in names:  # every hanging strategy's staging waits on its check
            dry = change(repos, name, 1)
            ci(http, name, proposed(http, name, DEV, dry))
            ci(http, name, proposed(http, name, STAGING, dry))
        started_at = time.perf_counter()
        for round_ in range(args.promotions):
            # Healthy: the checks answer at once; measured once the daemon is idle.
            endpoint.healthy.set()
            common.wait_for(lambda: endpoint.held == 0 and queue.idle(), timeout=WAIT, what="idle")
            healthy.append(
                promote(http, merges, "unrelated", change(repos, "unrelated", next(versions)))
            )
            # Hanging: a new staging commit for every hanging strategy, so that each one's
            # check is asked at once; measured while the endpoint holds their calls.
            endpoint.healthy.clear()
            fresh = {name: change(repos, name, next(versions)) for name in names}
            common.wait_for(
                lambda: endpoint.held >= min(hanging_count, 2 * hosts, 8) and queue.idle(),
                timeout=WAIT,
                what="checks hanging, the new commits read",
            )
            mine = names[round_ % len(names)]
            own_dev.append(promote(http, merges, mine, fresh[mine]))
            common.wait_for(queue.idle, timeout=WAIT, what="idle after its merge")
            hanging.append(
                promote(http, merges, "unrelated", change(repos, "unrelated", next(versions)))
            )
        endpoint.healthy.set()
        elapsed = time.perf_counter() - started_at
    p50_healthy = common.percentile(healthy, 50)
    p50_hanging = common.percentile(hanging, 50)
    return {
        "bench": "gate_faults",
        "promotions": len(healthy) + len(hanging),
        "hanging_strategies": hanging_count,
        "hosts": hosts,
        "check_timeout_s": args.timeout,
        "unrelated_healthy_p50_ms": ms(p50_healthy),
        "unrelated_hanging_p50_ms": ms(p50_hanging),
        "ratio": round(p50_hanging / p50_healthy, 2),
        "unrelated_healthy_max_ms": ms(max(healthy)),
        "unrelated_hanging_max_ms": ms(max(hanging)),
        "hanging_own_dev_p50_ms": ms(common.percentile(own_dev, 50)),
        "hanging_own_dev_max_ms": ms(max(own_dev)),
        "elapsed_s": round(elapsed, 1),
        "machine": common.machine(),
    }


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--promotions", type=int, default=20, help="of each kind")
    parser.add_argument(
        "--hanging", type=int, default=4, help="strategies whose check hangs, on one host"
    )
    parser.add_argument(
        "--hosts", type=int, default=10, help="strategies whose check hangs, each on its host"
    )
    parser.add_argument("--timeout", type=float, default=5.0, help="the check's timeout (s)")
    args = parser.parse_args(argv)
    figures = run(args, args.hanging, 1)
    many = run(args, args.hosts, args.hosts)
    passed = figures["ratio"] <= 2.0
    passed_many = many["ratio"] <= 2.0
    figures.update(
        many_hosts=many,
        target="hanging p50 <= 2x healthy p50, on one host and on many",
        checks={"ratio": passed, "many_hosts_ratio": passed_many},
    )
    lines = [
        f"{figures['promotions']} promotions of the unrelated strategy (gated by ci and a"
        " pooled HTTP check), alternating: the check endpoints of other strategies healthy,"
        f" then hanging (timeout {figures['check_timeout_s']} s); local SCM, real git,"
        " 2 workers, 8 gate workers",
    ]
    for case, found, ok in (("one host", figures, passed), ("many hosts", many, passed_many)):
        lines += [
            f"{case}: {found['hanging_strategies']} strategies hanging on {found['hosts']}"
            f" host(s); unrelated, gate -> merge: healthy p50 {found['unrelated_healthy_p50_ms']}"
            f" ms (max {found['unrelated_healthy_max_ms']}), hanging p50"
            f" {found['unrelated_hanging_p50_ms']} ms (max {found['unrelated_hanging_max_ms']}):"
            f" x{found['ratio']} {'ok' if ok else 'MISSED'} (target <= x2)",
            f"  a hanging strategy's own dev while its staging check hangs: p50"
            f" {found['hanging_own_dev_p50_ms']} ms (max {found['hanging_own_dev_max_ms']})",
        ]
    common.report(figures, lines)
    return 0 if passed and passed_many else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
