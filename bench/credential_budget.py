"""One credential's budget: N strategies on one GitHub token, then a burst of changes.

The daemon (in process, its starlette app) runs the GitHub plugin against the test
suite's stateful fake GitHub, which enforces GitHub's primary limit (5,000 requests an
hour per token, with its headers and its 403) and its secondary limits (100 requests
in flight, 900 points a minute, 80 content-creating requests a minute and 500 an hour,
answered 403 with ``retry-after`` and GitHub's body). **Time is scaled**: an hour lasts
``--hour`` seconds (120 by default) for the fake and the plugin alike, every limit keeps
its count and every span shrinks by the same factor, and so do the daemon's resync
interval (5 minutes) and the plugin's longest wait in a thread. Figures are given in
scaled seconds and in real hours.

``--strategies`` strategies (dev -> prod, ``ci`` required on the proposed commit) live
in 5 repositories, built with ``git fast-import``. Phase 1, the **cold start**: the daemon
starts with empty state and reads everything. Phase 2, the **burst**: the hydrator
renders a new dry commit for ``--changes`` strategies onto both ``-next`` branches, CI
reports ``ci`` green on each (check runs, then GitHub's webhooks), and every change goes
dev -> prod while the periodic resync keeps reading. The burst **drains** when the last
change's prod merge has returned.

    python bench/credential_budget.py [--strategies 1000] [--changes 300] [--hour 120]

At 30x, GitHub's 900 points a minute are 450 reads a second: about what the daemon
does on two shared cores, so the budget, not the CPU, paces the resync's reads; at 60x
the CPU would.

Targets: no secondary-limit hit, no 403 or 429 answer, every change merged into prod,
every limit's peak within the limit; the drain time is reported against the least
time GitHub's limits allow.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import common
from common import FastImport, Fleet, git

OWNER = "acme"
ENVIRONMENTS = ("dev", "prod")
HOUR = 3600.0
RESYNC = 300.0
"""The daemon's default resync interval, in real seconds (``--resync``)."""
POINTS = {"GET": 1}
WRITE_POINTS = 5


def progress(message: str) -> None:
    """A line on stderr while the benchmark runs (its figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def scaled(seconds: float, hour: float) -> str:
    return f"{seconds * hour / HOUR:.3f}s"


def config(fleet: Fleet, state: Path, args: argparse.Namespace) -> Any:
    from promoter.config import Config
    from tests.scm_github.conftest import TOKEN_ENV
    from tests.scm_github.test_end_to_end import SECRET_ENV

    return Config.model_validate(
        {
            "scmProviders": [{"name": "github", "github": {"token": {"fromEnv": TOKEN_ENV}}}],
            "repositories": fleet.repositories_spec("github", owner=OWNER),
            "promotionStrategies": fleet.strategies_spec(),
            "webhooks": {"github": {"secrets": [{"fromEnv": SECRET_ENV}]}},
            "daemon": {
                "stateDir": str(state),
                "resyncInterval": scaled(args.resync, args.hour),
                "workers": args.workers,
            },
        }
    )


def chosen(strategies: int, changes: int) -> list[int]:
    """``changes`` strategies spread evenly over all of them (and so over the repositories)."""
    return sorted({math.floor(k * strategies / changes) for k in range(changes)})


def hydrate(fleet: Fleet, picked: list[int]) -> dict[str, tuple[str, str]]:
    """The hydrator renders dry ``D2`` onto both proposed branches of each picked strategy,
    one ``git fast-import`` per repository; ``<strategy>/<env>-next`` -> (before, after)."""
    from promoter.git.metadata import METADATA_FILE, NOTES_REF, render_metadata

    moved: dict[str, tuple[str, str]] = {}
    for r in range(fleet.repos):
        path = fleet.repo_path(r)
        metadata = render_metadata(dry_sha=fleet.dry["D2"], repo_url=str(path), subject="D2")
        stream = FastImport()
        planned: list[tuple[str, str, str]] = []
        notes: dict[str, str] = {}
        for i in (i for i in picked if i % fleet.repos == r):
            for env in fleet.environments:
                key = f"app-{i}/{env}"
                files = {
                    f"apps/app-{i}/{env}/manifest.yaml": f"app: app-{i}\nenv: {env}\nimage: 2\n",
                    METADATA_FILE: metadata,
                }
                before = fleet.proposed[key]
                mark = stream.commit(
                    f"refs/heads/{key}-next", f"hydrate D2 for {key}\n", files, parent=before
                )
                notes[mark] = metadata
                planned.append((key, before, mark))
        if not planned:
            continue
        tip = git(path, "rev-parse", NOTES_REF)
        stream.commit(NOTES_REF, "Notes added by the bench hydrator\n", {}, parent=tip, notes=notes)
        marks = stream.run(path)
        for key, before, mark in planned:
            moved[f"{key}-next"] = (before, marks[mark])
    return moved


# --- what GitHub saw -----------------------------------------------------------------


def peak(times: list[tuple[float, int]], span: float) -> int:
    """The most weight within any ``span`` seconds (``times`` sorted)."""
    best, total, start = 0, 0, 0
    for at, weight in times:
        total += weight
        while times[start][0] <= at - span:
            total -= times[start][1]
            start += 1
        best = max(best, total)
    return best


def seen_by_github(fake: Any, since: int, hour: float, start: float) -> dict[str, Any]:
    """The calls GitHub answered from position ``since`` of its log, and their peaks;
    when every 250th content-creating call was answered, in hours since ``start``
    (``time.monotonic``)."""
    from tests.scm_github.fake_limits import CONTENT_CREATING

    calls = fake.calls[since:]
    minute = hour / 60
    calls = sorted(calls, key=lambda c: c.arrived)  # GitHub counts a request when it arrives
    charged = [(c.arrived, 1) for c in calls if c.status != 304]
    points = [(c.arrived, POINTS.get(c.method, WRITE_POINTS)) for c in calls]
    content = [
        (c.arrived, 1)
        for c in calls
        if any(m == c.method and route.match(c.path) for m, route in CONTENT_CREATING)
    ]
    return {
        "calls": len(calls),
        "charged": len(charged),
        "not_modified_304": len(calls) - len(charged),
        "writes": sum(1 for c in calls if c.method != "GET"),
        "content_creating": len(content),
        "refused_403_429": sum(1 for c in calls if c.status in (403, 429)),
        "peak_charged_per_hour": peak(charged, hour),
        "peak_points_per_minute": peak(points, minute),
        "peak_content_per_minute": peak(content, minute),
        "peak_content_per_hour": peak(content, hour),
        "charged_by_kind": by_kind(calls),
        "content_calls_at_real_hours": {
            str(n): round((content[n - 1][0] - start) / hour, 2)
            for n in [*range(250, len(content) + 1, 250), len(content)]
            if n
        },
    }


def by_kind(calls: list[Any]) -> dict[str, int]:
    """Charged calls (not 304) by method and route, commit SHAs and numbers left out."""
    kinds: dict[str, int] = {}
    for call in calls:
        if call.status != 304:
            kind = f"{call.method} " + re.sub(
                r"/[^/]+/gitops-\d+|/[0-9a-f]{40}|/\d+", "/*", call.path
            )
            kinds[kind] = kinds.get(kind, 0) + 1
    return dict(sorted(kinds.items(), key=lambda kv: -kv[1]))


# --- the run -------------------------------------------------------------------------


@dataclass
class Bench:
    args: argparse.Namespace
    root: Path

    @contextmanager
    def daemon(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        from starlette.testclient import TestClient

        from promoter.wiring import Daemon
        from scm_plugins.github import GitHubScm
        from scm_plugins.github.limits import GITHUB_LIMITS
        from tests.scm_github.conftest import TOKEN, TOKEN_ENV
        from tests.scm_github.fake_github import FakeGitHub
        from tests.scm_github.fake_limits import FakeLimits
        from tests.scm_github.genuine import Genuine
        from tests.scm_github.test_end_to_end import SECRET, SECRET_ENV, GitHubCI

        args = self.args
        os.environ[TOKEN_ENV], os.environ[SECRET_ENV] = TOKEN, SECRET
        self.fleet = Fleet(
            self.root / "remotes", args.strategies, environments=ENVIRONMENTS, pending_every=0
        ).build()
        fake = FakeGitHub(
            Genuine(common.ROOT / "tests" / "fixtures"),
            tokens=(TOKEN,),
            limits=FakeLimits().scaled(args.hour),
        )
        for r in range(self.fleet.repos):
            fake.add_repository(f"{OWNER}/gitops-{r}", self.fleet.repo_path(r))
        cfg = config(self.fleet, self.root / "state", args)
        limits = GITHUB_LIMITS.scaled(args.hour)
        plugin = GitHubScm(provider=cfg.scm_providers[0], state_dir="", limits=limits)
        self.events = common.Events()
        daemon = Daemon(cfg, plugins={"github": plugin}, observers=[self.events])
        with fake, TestClient(daemon.app, base_url=common.LOOPBACK) as client:
            yield daemon.runtime, fake, plugin, GitHubCI(client, fake)
        plugin.close()

    def run(self) -> dict[str, Any]:
        args, hour = self.args, self.args.hour
        with self.daemon() as (runtime, fake, plugin, ci):
            names = self.fleet.strategy_names()
            started, cold_at = time.perf_counter(), time.monotonic()
            progress(f"cold start of {len(names)} strategies")
            common.wait_for(
                lambda: cold_done(runtime, names, fake), timeout=args.timeout, what="the cold start"
            )
            cold_s = time.perf_counter() - started
            cold = seen_by_github(fake, 0, hour, cold_at)
            mark, throttled = len(fake.calls), throttled_calls()
            picked = chosen(args.strategies, args.changes)
            moved = hydrate(self.fleet, picked)
            after = self.events.mark()
            burst, burst_at = time.perf_counter(), time.monotonic()
            for branch, (before, tip) in moved.items():
                ci.push(branch, before, tip, self.full_name(branch))
            for branch, (_, tip) in moved.items():
                ci.check_run(tip, "ci", "success", self.full_name(branch))
            webhooks_s = time.perf_counter() - burst
            progress(f"burst of {len(picked)} changes announced in {webhooks_s:.1f} s")
            prods = {f"app-{i}/prod" for i in picked}
            merged = self.wait_merged(prods, after, args.timeout)
            drain_s = max(merged.values()) - burst if len(merged) == len(prods) else None
            during = seen_by_github(fake, mark, hour, burst_at)
            budget = plugin.calls.budget
        per_change = sorted(at - burst for at in merged.values())
        return {
            "bench": "credential_budget",
            "scaled": True,
            "hour_s": hour,
            "scale": round(HOUR / hour, 1),
            "strategies": args.strategies,
            "environments": len(ENVIRONMENTS),
            "changes": len(picked),
            "workers": args.workers,
            "resync_real_s": args.resync,
            "cold_start": {
                "wall_s": round(cold_s, 2),
                "real_hours": round(cold_s / hour, 3),
                **cold,
            },
            "burst": {
                "webhooks_s": round(webhooks_s, 2),
                "drain_s": round(drain_s, 2) if drain_s is not None else None,
                "drain_real_hours": round(drain_s / hour, 3) if drain_s is not None else None,
                "least_real_hours": least_hours(len(picked)),
                "merged_into_prod": len(merged),
                "last_change_merged": len(merged) == len(prods),
                "change_p50_real_hours": round(common.percentile(per_change, 50) / hour, 3),
                "throttled_locally": int(throttled_calls() - throttled),
                **during,
            },
            "secondary_limit_hits": len(fake.rate_limits.hits),
            "hits_by_limit": _tally(h.limit for h in fake.rate_limits.hits),
            "peak_in_flight": fake.rate_limits.peak_in_flight,
            "budget": {
                "admitted": budget.stats.admitted,
                "waited": budget.stats.waited,
                "waited_s": round(budget.stats.waited_s, 2),
                "longest_wait_s": round(budget.stats.longest_wait_s, 3),
                "throttled": budget.stats.throttled,
            },
            "limits": {
                "primary_per_hour": 5000,
                "points_per_minute": 900,
                "content_per_minute": 80,
                "content_per_hour": 500,
                "concurrent": 100,
            },
            "machine": common.machine(),
        }

    def full_name(self, branch: str) -> str:
        """The repository of a strategy's branch (``app-<i>/...`` lives in ``gitops-<i % 5>``)."""
        index = int(branch.split("/")[0].removeprefix("app-"))
        return f"{OWNER}/gitops-{index % self.fleet.repos}"

    def wait_merged(self, prods: set[str], after: int, timeout: float) -> dict[str, float]:
        """When each of ``prods`` merged (perf_counter), waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        merged: dict[str, float] = {}
        shown = time.monotonic()
        while len(merged) < len(prods) and time.monotonic() < deadline:
            for at, kind, env, _ in list(self.events.seen[after:]):
                if kind == "merged" and env in prods:
                    merged.setdefault(env, at)
            if time.monotonic() - shown > 10:
                shown = time.monotonic()
                progress(f"{len(merged)}/{len(prods)} changes in prod")
            time.sleep(0.2)
        return merged


_shown = [0.0]


def cold_done(runtime: Any, names: list[str], fake: Any) -> bool:
    """Every strategy reconciled once without an error (the resync keeps the queue busy)."""
    views = runtime.reconciler.views
    done = sum(1 for n in names if (v := views.get(n)) is not None and v.error is None)
    if time.monotonic() - _shown[0] > 10:
        _shown[0] = time.monotonic()
        progress(f"{done}/{len(names)} reconciled; {len(fake.calls)} calls answered")
    return done == len(names)


def throttled_calls() -> float:
    return common.counter("promoter_scm_calls_total", provider="github", outcome="throttled")


def least_hours(changes: int) -> float:
    """The least time GitHub's limits allow for the burst, in hours: each change opens and
    merges a PR per environment (content-creating), at most 500 of them in any hour."""
    content = changes * len(ENVIRONMENTS) * 2
    return float(math.ceil(content / 500) - 1)


def _tally(items: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for item in items:
        found[item] = found.get(item, 0) + 1
    return found


def checks(run: dict[str, Any]) -> dict[str, bool]:
    burst, cold, limits = run["burst"], run["cold_start"], run["limits"]
    peaks_ok = all(
        phase["peak_charged_per_hour"] <= limits["primary_per_hour"]
        and phase["peak_points_per_minute"] <= limits["points_per_minute"]
        and phase["peak_content_per_minute"] <= limits["content_per_minute"]
        and phase["peak_content_per_hour"] <= limits["content_per_hour"]
        for phase in (cold, burst)
    )
    return {
        "no_secondary_limit_hit": run["secondary_limit_hits"] == 0,
        "no_403_or_429": cold["refused_403_429"] == 0 and burst["refused_403_429"] == 0,
        "last_change_merged": burst["last_change_merged"],
        "peaks_within_limits": peaks_ok and run["peak_in_flight"] <= limits["concurrent"],
    }


def summary(run: dict[str, Any], passed: dict[str, bool]) -> list[str]:
    hour, cold, burst = run["hour_s"], run["cold_start"], run["burst"]
    limits = run["limits"]
    lines = [
        f"SCALED: one GitHub hour = {hour:g} s ({run['scale']:g}x); {run['strategies']}"
        f" strategies x {run['environments']} environments on one token, {run['workers']}"
        " workers",
    ]
    for label, phase in (("cold start", cold), ("burst", burst)):
        lines.append(
            f"  {label}: {phase['calls']} calls, {phase['charged']} charged,"
            f" {phase['not_modified_304']} free 304s, {phase['writes']} writes,"
            f" {phase['content_creating']} content-creating; 403/429: {phase['refused_403_429']}"
        )
        lines.append(
            f"    peaks: {phase['peak_charged_per_hour']}/{limits['primary_per_hour']} charged"
            f" an hour, {phase['peak_points_per_minute']}/{limits['points_per_minute']} points"
            f" a minute, content {phase['peak_content_per_minute']}/"
            f"{limits['content_per_minute']} a minute and {phase['peak_content_per_hour']}/"
            f"{limits['content_per_hour']} an hour"
        )
    lines.append(f"  cold start: {cold['wall_s']:.1f} s = {cold['real_hours']:.2f} real hours")
    drain = burst["drain_s"]
    lines.append(
        f"  burst of {run['changes']} changes: drained in "
        + (f"{drain:.1f} s = {burst['drain_real_hours']:.2f} real hours" if drain else "NEVER")
        + f" (GitHub's limits allow no less than {burst['least_real_hours']:g} h);"
        f" median change {burst['change_p50_real_hours']:.2f} h;"
        f" {burst['merged_into_prod']}/{run['changes']} in prod;"
        f" {burst['throttled_locally']} calls held back by the budget"
    )
    lines.append(
        "  content-creating calls answered by (real hours since the burst):"
        f" {burst['content_calls_at_real_hours']}"
    )
    lines.append(
        f"  secondary-limit hits: {run['secondary_limit_hits']}; peak in flight"
        f" {run['peak_in_flight']}/{limits['concurrent']}"
    )
    lines.append(
        "targets: " + "  ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in passed.items())
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--strategies", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=300)
    parser.add_argument("--hour", type=float, default=120.0, help="seconds a GitHub hour lasts")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--resync", type=float, default=RESYNC, help="the daemon's resync interval, real seconds"
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per phase")
    args = parser.parse_args(argv)
    common.quiet_logs()
    logging.getLogger("promoter.workers").setLevel(logging.ERROR)  # one line per held call
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        run = Bench(args, Path(tmp)).run()
    passed = checks(run)
    common.report({**run, "checks": passed}, summary(run, passed))
    return 0 if all(passed.values()) else 1


if __name__ == "__main__":
    raise SystemExit(common.run(main))
