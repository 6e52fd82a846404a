"""Promotion latency: from the status that turns the last gate green to the merge pushed.

The daemon runs under uvicorn on 127.0.0.1 with the local SCM and a real bare git
repository (one strategy: dev -> staging -> prod). The benchmark plays the hydrator,
CI and the health checker. For every dry change it hydrates all three environments,
tells the daemon (``POST /api/v1/refresh``, as a push webhook would), and then for
each environment in turn waits until everything else is in place and the daemon is
idle, and posts the last missing status through the API, over a keep-alive
connection:

* dev: ``ci`` on the proposed commit (a proposed gate);
* staging, prod: ``health`` on the previous environment's new commit (rule 4).

The latency is the time from sending that POST to the daemon's ``merged`` event
(emitted when the merge's compare-and-swap ref update has returned). Nothing else
runs meanwhile, so the figure is the daemon's own reaction time.

    python bench/promotion_latency.py [--promotions 100]

Targets: p50 <= 200 ms, p99 <= 1 s.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import common
from common import Counters

from promoter.http import free_port

TARGETS = {"p50_ms": 200.0, "p99_ms": 1000.0}
ENVIRONMENTS = ["environment/dev", "environment/staging", "environment/prod"]
STRATEGY = "guestbook"
TIMEOUT = 30.0


class Bench:
    def __init__(self, base: Path, workers: int) -> None:
        from promoter.cli.sandbox import GitOpsRepo, sandbox_config
        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon

        self.gitops = GitOpsRepo.create(base, values="image: guestbook:1.1.0\n")
        self.repo = self.gitops.path
        self.version = 1
        self.port = free_port()
        text = sandbox_config(
            self.repo,
            base / "state",
            daemon={
                "host": "127.0.0.1",
                "port": self.port,
                "resyncInterval": "5m",
                "workers": workers,
            },
        )
        self.events = common.Events()
        self.daemon = Daemon(parse_config(text), observers=[self.events])
        self.runtime = self.daemon.runtime

    def change(self) -> str:
        self.version += 1
        version = f"1.{self.version}.0"
        return self.gitops.change(version, f"guestbook {version}")

    def tip(self, branch: str) -> str:
        return common.git(self.repo, "rev-parse", f"refs/heads/{branch}")

    def idle(self) -> None:
        queue = self.runtime.queue
        common.wait_for(lambda: queue.idle() and not queue.waiting(), timeout=TIMEOUT, what="idle")

    def status(self, http: Any, sha: str, key: str) -> None:
        answer = http.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": key, "phase": "success"},
        )
        if answer.status_code != 201:
            raise RuntimeError(f"status refused: {answer.status_code} {answer.text}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    common.quiet_logs()
    latencies: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        bench = Bench(Path(tmp), args.workers)
        stop = common.serve(bench.daemon.app, bench.port)
        http = httpx.Client(base_url=f"http://127.0.0.1:{bench.port}", timeout=TIMEOUT)
        try:
            bench.idle()
            for branch in ENVIRONMENTS:
                bench.status(http, bench.tip(branch), "health")
            bench.idle()
            before = Counters.now("local")
            started = time.perf_counter()
            done = 0
            while done < args.promotions:
                mark = bench.events.mark()
                bench.change()
                http.post("/api/v1/refresh", json={"strategy": STRATEGY})
                for i, branch in enumerate(ENVIRONMENTS):
                    if done >= args.promotions:
                        break
                    bench.events.wait("opened", branch, after=mark)
                    if i == 0:
                        bench.idle()
                        last = (bench.tip(f"{branch}-next"), "ci")
                    else:
                        bench.status(http, bench.tip(f"{branch}-next"), "ci")
                        bench.idle()
                        last = (bench.tip(ENVIRONMENTS[i - 1]), "health")
                    at = bench.events.mark()
                    sent = time.perf_counter()
                    bench.status(http, *last)
                    merged, _ = bench.events.wait("merged", branch, after=at)
                    latencies["proposed gate (ci)" if i == 0 else "previous environment"].append(
                        merged - sent
                    )
                    done += 1
                bench.idle()
                bench.status(http, bench.tip(ENVIRONMENTS[-1]), "health")
            elapsed = time.perf_counter() - started
            spent = Counters.now("local") - before
        finally:
            http.close()
            stop()
    every = [x for xs in latencies.values() for x in xs]
    return {
        "bench": "promotion_latency",
        "promotions": len(every),
        "workers": args.workers,
        "p50_ms": ms(common.percentile(every, 50)),
        "p90_ms": ms(common.percentile(every, 90)),
        "p99_ms": ms(common.percentile(every, 99)),
        "max_ms": ms(max(every)),
        "mean_ms": ms(sum(every) / len(every)),
        "by_last_gate": {
            kind: {
                "n": len(xs),
                "p50_ms": ms(common.percentile(xs, 50)),
                "p99_ms": ms(common.percentile(xs, 99)),
            }
            for kind, xs in latencies.items()
        },
        "elapsed_s": round(elapsed, 1),
        "scm_calls_per_promotion": round(spent.scm_calls / len(every), 2),
        "git_fetches_per_promotion": round(spent.fetches / len(every), 2),
        "git_ls_remotes_per_promotion": round(spent.ls_remotes / len(every), 2),
        "machine": common.machine(),
    }


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1) if math.isfinite(seconds) else seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--promotions", type=int, default=100, help="environment promotions")
    parser.add_argument("--workers", type=int, default=2, help="reconcile workers")
    args = parser.parse_args(argv)
    figures = run(args)
    passed = {
        "p50_ms": figures["p50_ms"] <= TARGETS["p50_ms"],
        "p99_ms": figures["p99_ms"] <= TARGETS["p99_ms"],
    }
    figures.update(targets=TARGETS, checks=passed)
    lines = [
        f"{figures['promotions']} promotions (local SCM, real git, uvicorn on 127.0.0.1,"
        f" {figures['workers']} workers) in {figures['elapsed_s']} s",
        f"last gate green -> merge pushed: p50 {figures['p50_ms']} ms  p90 {figures['p90_ms']} ms"
        f"  p99 {figures['p99_ms']} ms  max {figures['max_ms']} ms",
    ]
    for kind, x in figures["by_last_gate"].items():
        lines.append(f"  last gate {kind}: n={x['n']} p50 {x['p50_ms']} ms  p99 {x['p99_ms']} ms")
    lines.append(
        f"per promotion: {figures['scm_calls_per_promotion']} SCM calls,"
        f" {figures['git_fetches_per_promotion']} fetches,"
        f" {figures['git_ls_remotes_per_promotion']} ls-remotes"
    )
    lines.append(
        "targets: "
        + "  ".join(f"{k} <= {TARGETS[k]:.0f} {'ok' if v else 'MISSED'}" for k, v in passed.items())
    )
    common.report(figures, lines)
    return 0 if all(passed.values()) else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
