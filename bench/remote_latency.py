"""Promotion latency against a remote SCM: 50 ms added to every API call and git round trip.

The daemon runs with the GitHub plugin against the stateful GitHub fake
(``tests/scm_github/fake_github.py``), which sleeps ``--rtt`` before answering each
API request, and reaches its repository over git smart HTTP (``git http-backend``
behind a loopback server that sleeps ``--rtt`` per HTTP request: each ``ls-remote``,
fetch negotiation and push). The hydrator pushes and GitHub's ``push`` webhooks
announce each push, as in production; ref polling is off.

For each environment in turn the benchmark waits until everything but the last gate
is in place and the daemon is idle, then turns the last gate green as GitHub would
(the check run or status set on the fake, then its webhook):

* dev: the ``ci`` check run on the PR head (a proposed gate);
* staging, prod: ``health`` on the previous environment's merge commit (rule 4).

The latency runs from sending that webhook to the daemon's ``merged`` event, emitted
when the merge call has returned. Every API request and git HTTP request in between is
logged: the figure **round trips** is how many ran one after the other on the way
(requests that overlap an earlier one count once).

    python bench/remote_latency.py [--promotions 100] [--rtt 0.05]

Target: at most 3 round trips plus the merge (the pre-merge re-read of the required
gates and the merge itself are the floor), p50 and p99 reported.
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import common

TARGET_ROUND_TRIPS = 4
"""3 round trips plus the merge itself."""
ENVIRONMENTS = ("environment/dev", "environment/staging", "environment/prod")
STRATEGY = "guestbook"
TIMEOUT = 60.0


class Remote:
    """The fake GitHub and the git HTTP server, both slowed down and both logging requests."""

    def __init__(self, rtt: float) -> None:
        self.rtt = rtt
        self.api: list[tuple[float, float, str, str]] = []
        self._lock = threading.Lock()

    def on_request(self, method: str, path: str) -> None:
        started = time.perf_counter()
        time.sleep(self.rtt)
        with self._lock:
            self.api.append((started, time.perf_counter(), method, path))


@contextmanager
def session(tmp: Path, rtt: float) -> Iterator[Any]:
    from starlette.testclient import TestClient

    from promoter.config.loader import parse_config
    from promoter.wiring import Daemon
    from tests.scm_github.conftest import TOKEN, TOKEN_ENV
    from tests.scm_github.fake_github import FakeGitHub
    from tests.scm_github.genuine import Genuine
    from tests.scm_github.git_http import git_http_server
    from tests.scm_github.test_end_to_end import (
        FULL_NAME,
        SECRET,
        SECRET_ENV,
        GitHubCI,
        config_text,
    )
    from tests.support import GitOpsRepo

    os.environ[TOKEN_ENV], os.environ[SECRET_ENV] = TOKEN, SECRET
    gitops = GitOpsRepo.create(tmp)
    root = tmp / "served" / FULL_NAME.split("/")[0]
    root.mkdir(parents=True)
    (root / "gitops.git").symlink_to(gitops.path)
    common.git(gitops.path, "config", "http.receivepack", "true")
    accepted = {"basic " + base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()}
    remote = Remote(rtt)
    with (
        git_http_server(tmp / "served", accepted=accepted, delay=rtt) as server,
        FakeGitHub(Genuine(common.ROOT / "tests" / "fixtures"), tokens=(TOKEN,)) as fake,
    ):
        fake.add_repository(FULL_NAME, gitops.path)
        fake.on_request = remote.on_request
        url = f"http://127.0.0.1:{server.server_address[1]}/{FULL_NAME}.git"
        events = common.Events()
        text = config_text(url, tmp / "state", poll_interval="1h", resync_interval="1h")
        daemon = Daemon(parse_config(text), observers=[events])
        with TestClient(daemon.app, base_url=common.LOOPBACK) as client:
            robot = GitHubCI(client, fake)
            yield Harness(gitops, fake, server, remote, events, daemon.runtime, client, robot)


class Harness:
    def __init__(self, *parts: Any) -> None:
        (
            self.gitops,
            self.fake,
            self.server,
            self.remote,
            self.events,
            self.runtime,
            self.client,
            self.robot,
        ) = parts

    def env(self, branch: str) -> dict[str, Any]:
        view = self.client.get(f"/api/v1/strategies/{STRATEGY}").json()
        found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
        return found

    def idle(self) -> None:
        queue = self.runtime.queue
        common.wait_for(
            lambda: (queue.idle() and not queue.waiting()) or None, timeout=TIMEOUT, what="idle"
        )
        time.sleep(self.remote.rtt)  # a webhook the fake sent from another thread lands

    def requests_between(self, start: float, end: float) -> list[tuple[float, float, str, str]]:
        found = [r for r in self.remote.api if start <= r[0] <= end]
        found += [
            (*r[:2], "git " + r[2], r[3]) for r in self.server.requests if start <= r[0] <= end
        ]
        return sorted(found)


def sequential(requests: list[tuple[float, float, str, str]]) -> int:
    """Requests that did not overlap the one before: the round trips in a row."""
    count, busy_until = 0, 0.0
    for started, ended, _, _ in requests:
        if started >= busy_until:
            count += 1
        busy_until = max(busy_until, ended)
    return count


def promote(h: Harness, change: str, branch: str) -> dict[str, Any]:
    """Everything but the last gate, then the last gate's webhook; the timed window."""
    from tests.scm_github.test_end_to_end import FULL_NAME

    env = common.wait_for(
        lambda: (
            (e := h.env(branch)).get("pullRequest")
            and (e.get("proposed") or {}).get("drySha") == change
            and e
        ),
        timeout=TIMEOUT,
        what=f"the PR into {branch}",
    )
    head = env["proposed"]["hydratedSha"]
    index = ENVIRONMENTS.index(branch)
    if index:  # ci first; the previous environment's health last
        h.robot.check_run(head, "ci", "success")
    h.idle()
    mark = h.events.mark()
    started = time.perf_counter()
    if index:
        previous = h.gitops.tip(ENVIRONMENTS[index - 1])
        h.fake.post_status(FULL_NAME, previous, "health", "success")
        h.robot.status(previous, "health")
    else:
        h.robot.check_run(head, "ci", "success")
    merged, _ = h.events.wait("merged", branch, after=mark, timeout=TIMEOUT)
    window = h.requests_between(started, merged)
    common.wait_for(
        lambda: (h.env(branch).get("active") or {}).get("drySha") == change or None,
        timeout=TIMEOUT,
        what=f"{branch} running the change",
    )
    if index == len(ENVIRONMENTS) - 1:
        h.robot.status(h.gitops.tip(branch), "health")
    return {
        "branch": branch,
        "ms": (merged - started) * 1000,
        "round_trips": sequential(window),
        "requests": [f"{m} {p}" for _, _, m, p in window],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--promotions", type=int, default=100)
    parser.add_argument("--rtt", type=float, default=0.05, help="seconds per round trip")
    args = parser.parse_args(argv)
    common.quiet_logs()
    os.environ.update(common.IDENTITY)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-rtt-") as tmp, session(Path(tmp), args.rtt) as h:
        common.wait_for(
            lambda: h.env(ENVIRONMENTS[-1]).get("state") == "up-to-date" or None,
            timeout=TIMEOUT,
            what="the first reconcile",
        )
        for branch in ENVIRONMENTS:
            h.robot.status(h.gitops.tip(branch), "health")
        h.idle()
        n = 0
        while len(results) < args.promotions:
            change = h.robot.hydrate(h.gitops, f"3.{n}.0", f"Bump guestbook to 3.{n}.0")
            n += 1
            for branch in ENVIRONMENTS:
                if len(results) < args.promotions:
                    results.append(promote(h, change, branch))
    ms = [r["ms"] for r in results]
    trips = [r["round_trips"] for r in results]
    worst = max(results, key=lambda r: r["round_trips"])
    by_branch = {
        b: Counter(r["round_trips"] for r in results if r["branch"] == b) for b in ENVIRONMENTS
    }
    figures = {
        "bench": "remote_latency",
        "promotions": len(results),
        "rtt_ms": args.rtt * 1000,
        "p50_ms": round(common.percentile(ms, 50), 1),
        "p90_ms": round(common.percentile(ms, 90), 1),
        "p99_ms": round(common.percentile(ms, 99), 1),
        "max_ms": round(max(ms), 1),
        "round_trips_max": max(trips),
        "round_trips_by_environment": {b: dict(c) for b, c in by_branch.items()},
        "slowest_path": worst["requests"],
        "target_round_trips": TARGET_ROUND_TRIPS,
        "pass": max(trips) <= TARGET_ROUND_TRIPS,
        "machine": common.machine(),
    }
    common.report(
        figures,
        [
            f"{len(results)} promotions, {args.rtt * 1000:.0f} ms per API call and git round trip",
            f"last gate green -> merge returned: p50 {figures['p50_ms']} ms,"
            f" p90 {figures['p90_ms']} ms, p99 {figures['p99_ms']} ms, max {figures['max_ms']} ms",
            f"sequential round trips: at most {max(trips)} (target <= {TARGET_ROUND_TRIPS}:"
            " 3 plus the merge)  " + ("[ok]" if figures["pass"] else "[MISSED]"),
            f"  by environment: {figures['round_trips_by_environment']}",
            f"  the longest path: {worst['requests']}",
        ],
    )
    return 0 if figures["pass"] else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
