"""Resync at scale: N strategies x 4 environments over 50 shared repositories.

For each size, in a fresh process (so that peak RSS is that size's own): build the
repositories with ``git fast-import`` (their refs then packed, as a hosting's housekeeping
keeps a repository's refs), seed the SCM with a green ``health`` status on
every running commit, then start the daemon with empty state and time

* the **cold first start**: every strategy reconciled from nothing (mirrors cloned,
  every status and PR read, every environment's healthy commit recorded in the ledger,
  a PR opened for each pending change);
* an **idle resync**, as the periodic timer runs it (``Scheduler.resync``: one
  ``ls-remote`` per repository; quiet strategies skipped unless it is their turn in
  the sweep, ``settledRecheck`` 1 h over a ``resyncInterval`` of 5 min: a twelfth of
  them), first with the webhooks **silent** (nothing heard since the start: every
  strategy that waits is read again), then **flowing** (CD has just re-reported ``health`` on one
  commit per repository: through the API on the local SCM, a signed ``status``
  webhook on GitHub; what strategies wait for is read in turn too). What the timer
  spreads over the next interval (the strategies that wait, the first at once; the
  sweep's share) is measured on its own, run at once;
* every strategy **woken at once** with the caches warm (a burst of webhooks);
* a **cold restart**, in a fresh process as production restarts: a new daemon whose
  state dir was lost (only the SCM's data and what was pushed to the repositories
  remain), reconciling everything again; it must reach the same verdicts. Peak RSS is
  the larger of the two processes'.

That is with the local SCM. Then, in another fresh process, the same fleet on the
**GitHub plugin** against the stateful GitHub fake (``tests/scm_github/fake_github.py``,
in process through ``responses``: the plugin, PyGithub and requests run for real, the
socket does not; over loopback HTTP the fake's own CPU would share the 2 cores), a
cold start (not judged: it is the GitHub fake's setup), two silent and two flowing idle
resyncs, counting the calls GitHub charges (a conditional GET answered 304 is free).

Every 4th strategy has a new dry commit proposed for its first environment (its PR
is opened in the cold start and stays blocked on its ``ci`` gate). Ref polling is
off, so that every git and SCM call counted belongs to the phase.

    python bench/resync_scale.py [--size 1000 --size 3000 --size 10000 --size 30000] [--repos 50]

``--cold-only`` measures the cold first start and the cold restart alone (no idle
phase, no GitHub run): what the CPU targets judge, in a few minutes at 10,000.

Every phase reports its wall time and the CPU it took: user and system seconds of this
process and of its git processes, those it waited for (``getrusage`` of ``RUSAGE_SELF``
plus ``RUSAGE_CHILDREN``) and those still running (the persistent ``cat-file``
processes: ``common.live_children_cpu``); ``process_cpu_s`` is this process's share
alone (the rest is git's). The targets are judged on the CPU, which the
machine's other load moves much less than the wall time (issue #63). For N = 10,000
(issue #33, target 1): cold first start and cold restart <= 30 s of CPU each, peak RSS
<= 600 MB, idle resync <= 10 s of CPU with no SCM write, no charged GitHub call and at
most one ``ls-remote`` per repository. For N = 30,000, on one replica: cold first start
and restart <= 100 s of CPU, peak RSS <= 2 GB. Cost per strategy flat or falling from
1,000 to the largest size.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from collections import Counter as Tally
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import common
from common import Counters, Fleet

TARGETS = {
    "cold_cpu_s": 30.0,
    "peak_rss_mb": 600.0,
    "ceiling_cold_cpu_s": 100.0,
    "ceiling_peak_rss_mb": 2048.0,
    "idle_cpu_s": 10.0,
    "idle_scm_writes": 0,
    "idle_charged_github_calls": 0,
    "idle_ls_remotes_per_repo": 1,
    "flat_growth_exponent": 1.05,
}
TARGET_SIZE = 10_000
CEILING_SIZE = 30_000
"""One replica's ceiling (issue #33): judged on its cold start and peak RSS."""
DEFAULT_SIZES = (1000, 3000, 10_000, 30_000)
DAEMON = {"resyncInterval": "5m", "settledRecheck": "1h"}
"""The production defaults, spelled out: the sweep takes a twelfth of the quiet strategies."""


def fleet_config(
    fleet: Fleet, state: Path, workers: int | None, *, github: bool = False, github_url: str = ""
) -> Any:
    """The fleet's configuration on the local SCM, or on GitHub (``github_url``: the API
    of a GitHub served over plain HTTP on 127.0.0.1)."""
    from promoter.config import Config

    daemon: dict[str, Any] = {"stateDir": str(state), **DAEMON}
    if workers:
        daemon["workers"] = workers
    provider: dict[str, Any] = {"name": "local", "local": {}}
    if github:
        provider = {"name": "github", "github": {"token": {"fromEnv": GITHUB_TOKEN_ENV}}}
        if github_url:
            provider["github"].update(url=github_url, allowInsecure=True)
    return Config.model_validate(
        {
            "scmProviders": [provider],
            "repositories": fleet.repositories_spec(
                provider["name"], owner=GITHUB_OWNER if github else ""
            ),
            "promotionStrategies": fleet.strategies_spec(active=("health",)),
            "daemon": daemon,
            **(
                {"webhooks": {"github": {"secrets": [{"fromEnv": GITHUB_SECRET_ENV}]}}}
                if github
                else {}
            ),
        }
    )


GITHUB_OWNER = "acme"
GITHUB_TOKEN_ENV = "PROMOTER_BENCH_GITHUB_TOKEN"
GITHUB_SECRET_ENV = "PROMOTER_BENCH_GITHUB_HOOK_SECRET"
GITHUB_SECRET = "bench-hook-secret"


MEASURED_TURNS = {1, 2, 3, 4}
"""The sweep turns of the measured resyncs (the start's resync is turn 0; on GitHub two
silent resyncs, then two while webhooks flow)."""


def running_commits(runtime: Any, fleet: Fleet) -> dict[int, str]:
    """One running commit per repository (dev's), of a strategy whose sweep turn is not
    among the measured ones: the status CD posts on it changes what GitHub answers for
    that commit, so re-reading it is charged, and that strategy is not idle."""
    found: dict[int, str] = {}
    for i in range(fleet.strategies):
        r = i % fleet.repos
        if r not in found and runtime.resync.turn_of(f"app-{i}") not in MEASURED_TURNS:
            found[r] = fleet.active[f"app-{i}/{fleet.environments[0]}"]
    return found


def heard_locally(runtime: Any, fleet: Fleet) -> None:
    """CD reports ``health`` again on one running commit per repository, through the
    daemon's API (how the local SCM hears of statuses): its webhooks are flowing."""
    from promoter.models import CommitStatus, Phase

    for r, sha in running_commits(runtime, fleet).items():
        status = CommitStatus(key="health", phase=Phase.SUCCESS, source="cd")
        runtime.post_status(f"gitops-{r}", sha, status)


def heard_from_github(daemon: Any, fake: Any, fleet: Fleet) -> None:
    """CD reports ``health`` again on one running commit per repository, on GitHub, and
    GitHub delivers its signed ``status`` webhook: the repositories' webhooks are flowing."""
    import json
    import uuid

    from starlette.testclient import TestClient

    from tests.fixture_paths import GITHUB_WEBHOOKS
    from webhooks.verify import GitHubSignature

    client = TestClient(daemon.app, base_url=common.LOOPBACK)
    template = (GITHUB_WEBHOOKS / "status/payload.json").read_text()
    for r, sha in running_commits(daemon.runtime, fleet).items():
        full_name = f"{GITHUB_OWNER}/gitops-{r}"
        fake.post_status(full_name, sha, "health", "success")
        stored = fake.repositories[full_name].statuses[sha][0]
        payload = json.loads(template)
        payload.update(sha=sha, context="health", state="success", updated_at=stored["updated_at"])
        payload["repository"].update(full_name=full_name, name=full_name.split("/")[1])
        for field in ("clone_url", "html_url", "git_url", "ssh_url", "url", "svn_url"):
            payload["repository"].pop(field, None)
        raw = json.dumps(payload).encode()
        headers = {
            "X-GitHub-Event": "status",
            "X-GitHub-Delivery": str(uuid.uuid4()),
            "X-Hub-Signature-256": GitHubSignature.sign(GITHUB_SECRET, raw),
            "Content-Type": "application/json",
        }
        answer = client.post("/webhooks/github", content=raw, headers=headers)
        assert answer.status_code == 202, answer.text


def seed_statuses(fleet: Fleet, state: Path) -> None:
    """The SCM already knows every running commit is healthy (CD reported it)."""
    from promoter.models import CommitStatus, Phase
    from scm_plugins.local.store import LocalStore

    store = LocalStore(state / "local-scm.sqlite3")
    db = store._db()
    db.execute("BEGIN")
    for key, sha in fleet.active.items():
        repo = f"gitops-{int(key.split('/')[0].split('-')[1]) % fleet.repos}"
        store.set_status(repo, sha, CommitStatus(key="health", phase=Phase.SUCCESS, source="cd"))
    db.execute("COMMIT")
    store.close()


def settled(runtime: Any, names: list[str], since: datetime | None) -> bool:
    """Nothing left to do in the queue and, unless ``since`` is None, every strategy
    reconciled since ``since`` (and nothing delayed either)."""
    queue = runtime.queue
    if not queue.idle():
        return False
    if since is None:  # the sweep's share of a resync waits, spread over the interval
        return True
    if queue.waiting():
        return False
    views = runtime.reconciler.views
    return all((v := views.get(n)) is not None and v.reconciled_at >= since for n in names)


def process_cpu_seconds() -> float:
    """CPU time of this process alone, user and system (``common.cpu_seconds`` less its
    git children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def resync(
    runtime: Any, names: list[str], *, how: str, timeout: float, charged: Any = None
) -> dict[str, Any]:
    """One resync, its wall time and what it cost.

    ``how``: "start" (the daemon's start, which resyncs), "resync" (the periodic
    timer's job, without the share of the sweep it spreads over the next interval),
    "sweep" (that share, run at once) or "wake" (every strategy enqueued with the
    caches as they are).
    ``charged``: how many calls GitHub charged so far (the fake's count).
    """
    before = Counters.now()
    cpu_before = common.cpu_seconds()
    own_before = process_cpu_seconds()
    charged_before = charged() if charged else None
    since: datetime | None = datetime.now(UTC)
    started = time.perf_counter()
    if how == "start":
        runtime.start()
    elif how == "resync":
        runtime.scheduler.resync()
        since = None  # quiet strategies are skipped: done when the queue is
    elif how == "sweep":
        last = runtime.resync.last
        runtime.queue.add_many([*last.spread, *last.swept])
        since = None
    else:
        runtime.queue.add_many(names)
    common.wait_for(
        lambda: settled(runtime, names, since), timeout=timeout, what="the resync", poll=0.02
    )
    wall = time.perf_counter() - started
    spent = Counters.now() - before
    cpu = common.cpu_seconds() - cpu_before
    own = process_cpu_seconds() - own_before
    out = {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "process_cpu_s": round(own, 2),  # the rest of ``cpu_s``: the git children's
        **spent.as_json(),
    }
    if how in ("resync", "sweep"):
        out["spread"] = len(runtime.resync.last.spread)
        out["swept"] = len(runtime.resync.last.swept)
    if charged is not None:
        out["github_charged"] = charged() - charged_before
    return out


def outcome(runtime: Any, names: list[str]) -> dict[str, Any]:
    """What the daemon concluded: environment states, errors."""
    states: Tally[str] = Tally()
    errors = 0
    for name in names:
        view = runtime.reconciler.views[name]
        if view.error:
            errors += 1
        if view.decision is not None:
            states.update(v.state.value for v in view.decision.environments)
    return {"states": dict(sorted(states.items())), "errors": errors}


def open_prs(runtime: Any) -> int:
    plugin = runtime.plugins["local"]
    return sum(len(plugin.store.open_pr(r.name)) for r in runtime.config.repositories)


def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """One size on the local SCM, in this process: build, cold start, idle resync, all
    woken. The fleet and the SCM's data are left in ``args.root`` for the restart."""
    from promoter.wiring import Daemon

    common.quiet_logs()
    root = Path(args.root)
    started = time.perf_counter()
    fleet = Fleet(root / "remotes", size, repos=args.repos, pending_every=4).build()
    build_s = time.perf_counter() - started
    state = root / "state"
    state.mkdir()
    seed_statuses(fleet, state)
    config = fleet_config(fleet, state, args.workers)
    names = fleet.strategy_names()
    rss_before = common.peak_rss_mb()
    daemon = Daemon(config)
    runtime = daemon.runtime
    try:
        cold = resync(runtime, names, how="start", timeout=args.timeout)
        result = {**outcome(runtime, names), "open_prs": open_prs(runtime)}
        idle_phases: dict[str, Any] = {}
        if not args.cold_only:
            silent = resync(runtime, names, how="resync", timeout=args.timeout)
            silent_share = resync(runtime, names, how="sweep", timeout=args.timeout)
            heard_locally(runtime, fleet)
            common.wait_for(lambda: settled(runtime, names, None), timeout=60, what="quiet")
            idle_phases = {
                "idle_resync_silent": silent,
                "idle_silent_share": silent_share,
                "idle_resync": resync(runtime, names, how="resync", timeout=args.timeout),
                "idle_sweep": resync(runtime, names, how="sweep", timeout=args.timeout),
                "idle_warm": resync(runtime, names, how="wake", timeout=args.timeout),
            }
    finally:
        runtime.stop()
    return {
        "plugin": "local",
        "strategies": size,
        "environments": size * len(fleet.environments),
        "repositories": args.repos,
        "workers": config.daemon.workers,
        "build_s": round(build_s, 2),
        "cold": cold,
        **idle_phases,
        "outcome": result,
        "peak_rss_mb": common.peak_rss_mb(),
        "rss_before_daemon_mb": rss_before,
        "machine": common.machine(),
    }


def measure_restart(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The cold restart, in a fresh process as production restarts: a daemon whose state
    dir was lost (only the SCM's own data, the local SCM's database standing for GitHub's,
    and what was pushed to the repositories remain) reconciles everything again."""
    from promoter.wiring import Daemon

    common.quiet_logs()
    root = Path(args.root)
    fleet = Fleet(root / "remotes", size, repos=args.repos, pending_every=4)
    state = root / "state"
    for path in state.iterdir():
        if not path.name.startswith("local-scm.sqlite3"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    config = fleet_config(fleet, state, args.workers)
    names = fleet.strategy_names()
    rss_before = common.peak_rss_mb()
    daemon = Daemon(config)
    runtime = daemon.runtime
    try:
        restart = resync(runtime, names, how="start", timeout=args.timeout)
        restarted = {**outcome(runtime, names), "open_prs": open_prs(runtime)}
    finally:
        runtime.stop()
    return {
        "cold_restart": restart,
        "outcome_after_restart": restarted,
        "peak_rss_mb": common.peak_rss_mb(),
        "rss_before_daemon_mb": rss_before,
    }


def measure_local(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The local SCM's run of one size: its phases in one fresh process, the cold restart
    in another, over the same repositories and SCM data; peak RSS is the larger."""
    child = [__file__, "--size", str(size), "--repos", str(args.repos)]
    child += ["--workers", str(args.workers), "--timeout", str(args.timeout)]
    child += ["--cold-only"] if args.cold_only else []
    with tempfile.TemporaryDirectory(prefix="bench-resync-") as tmp:
        child += ["--root", tmp]
        run = common.run_child([*child, "--child", "local"], timeout=args.timeout * 4 + 300)
        again = common.run_child([*child, "--child", "restart"], timeout=args.timeout + 300)
    return {
        **run,
        "cold_restart": again["cold_restart"],
        "outcome_after_restart": again["outcome_after_restart"],
        "peak_rss_mb": max(run["peak_rss_mb"], again["peak_rss_mb"]),
        "peak_rss_first_start_mb": run["peak_rss_mb"],
        "peak_rss_restart_mb": again["peak_rss_mb"],
    }


def measure_github(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """The same fleet on the GitHub plugin against the GitHub fake: a cold start, then
    two silent and two flowing idle resyncs with what GitHub charged for them."""
    import os
    from dataclasses import replace

    from promoter.wiring import Daemon
    from scm_plugins.budget import CredentialBudget
    from scm_plugins.github.limits import GITHUB_LIMITS
    from tests.scm_github import fake_git
    from tests.scm_github.fake_github import FakeGitHub
    from tests.scm_github.fake_limits import FakeLimits
    from tests.scm_github.genuine import Genuine

    common.quiet_logs()
    with tempfile.TemporaryDirectory(prefix="bench-resync-gh-") as tmp:
        root = Path(tmp)
        fleet = Fleet(root / "remotes", size, repos=args.repos, pending_every=4).build()
        known = set(fleet.active.values()) | set(fleet.proposed.values())
        exists = fake_git.commit_exists
        # A commit that exists always will: the fake asks git only about new ones.
        fake_git.commit_exists = lambda git_dir, sha: sha in known or exists(git_dir, sha)
        token = "ghp_bench000000000000000000000000000000000"
        os.environ[GITHUB_TOKEN_ENV] = token
        os.environ[GITHUB_SECRET_ENV] = GITHUB_SECRET
        # GitHub's rate limits are not what this measures (bench/credential_budget.py
        # does): the fake counts what it would charge, neither side waits for it.
        unlimited = 10**9
        genuine = Genuine(common.ROOT / "tests" / "fixtures")
        lifted = FakeLimits(
            primary=unlimited,
            concurrent=unlimited,
            points_per_minute=unlimited,
            content_per_minute=unlimited,
            content_per_hour=unlimited,
        )
        with FakeGitHub(genuine, tokens=(token,), limits=lifted) as fake:
            for r in range(fleet.repos):
                fake.add_repository(f"{GITHUB_OWNER}/gitops-{r}", fleet.repo_path(r))
            for key, sha in fleet.active.items():
                r = int(key.split("/")[0].split("-")[1]) % fleet.repos
                fake.post_status(f"{GITHUB_OWNER}/gitops-{r}", sha, "health", "success")
            config = fleet_config(fleet, root / "state", args.workers, github=True)
            names = fleet.strategy_names()
            daemon = Daemon(config)
            runtime = daemon.runtime
            free = replace(
                GITHUB_LIMITS,
                primary=unlimited,
                concurrent=unlimited,
                points_per_minute=unlimited,
                content_per_minute=unlimited,
                content_per_window=unlimited,
            )
            runtime.plugins["github"].calls.budget = CredentialBudget(free)
            charged = fake.charged
            try:
                cold = resync(runtime, names, how="start", timeout=args.timeout, charged=charged)
                result = outcome(runtime, names)
                silent, silent_shares = [], []
                for _ in range(2):
                    runtime.resync.heard_at.clear()  # nothing heard for a whole interval
                    silent.append(
                        resync(runtime, names, how="resync", timeout=args.timeout, charged=charged)
                    )
                    silent_shares.append(
                        resync(runtime, names, how="sweep", timeout=args.timeout, charged=charged)
                    )
                idle, sweeps = [], []
                for _ in range(2):
                    heard_from_github(daemon, fake, fleet)
                    common.wait_for(lambda: settled(runtime, names, None), timeout=60, what="quiet")
                    idle.append(
                        resync(runtime, names, how="resync", timeout=args.timeout, charged=charged)
                    )
                    sweeps.append(
                        resync(runtime, names, how="sweep", timeout=args.timeout, charged=charged)
                    )
            finally:
                runtime.stop()
                fake_git.commit_exists = exists
    return {
        "plugin": "github",
        "strategies": size,
        "repositories": args.repos,
        "cold": cold,
        "idle_resync_silent": silent,
        "idle_silent_share": silent_shares,
        "idle_resync": idle,
        "idle_sweep": sweeps,
        "outcome": result,
        "peak_rss_mb": common.peak_rss_mb(),
    }


def checks(run: dict[str, Any], github: dict[str, Any] | None) -> dict[str, bool]:
    repos = run["repositories"]
    found = {
        "cold_cpu_s": run["cold"]["cpu_s"] <= TARGETS["cold_cpu_s"],
        "cold_restart_cpu_s": run["cold_restart"]["cpu_s"] <= TARGETS["cold_cpu_s"],
        "peak_rss_mb": run["peak_rss_mb"] <= TARGETS["peak_rss_mb"],
        "no_errors": run["outcome"]["errors"] == 0 and run["outcome_after_restart"]["errors"] == 0,
        "same_outcome_after_restart": run["outcome"] == run["outcome_after_restart"],
    }
    if "idle_resync" not in run:  # --cold-only
        return found
    idle = [run["idle_resync"], run["idle_resync_silent"]]
    if github:
        idle += [*github["idle_resync"], *github["idle_resync_silent"]]
    found |= {
        "idle_cpu_s": all(r["cpu_s"] <= TARGETS["idle_cpu_s"] for r in idle),
        "idle_scm_writes": all(r["scm_writes"] == 0 for r in idle),
        "idle_ls_remotes_per_repo": all(
            r["git_ls_remotes"] <= repos * TARGETS["idle_ls_remotes_per_repo"] for r in idle
        ),
        "idle_fetches": all(r["git_fetches"] == 0 for r in idle),
    }
    if github is not None:
        # The steady idle resyncs: the first after the start re-reads each PR list that
        # the start changed (it opened the PR), which GitHub answers 200 and charges.
        steady = (
            github["idle_resync_silent"][-1],
            github["idle_silent_share"][-1],
            github["idle_resync"][-1],
            github["idle_sweep"][-1],
        )
        found["idle_charged_github_calls"] = all(
            x["github_charged"] <= TARGETS["idle_charged_github_calls"] for x in steady
        )
        found["github_same_outcome"] = dict(github["outcome"]) == {
            k: v for k, v in run["outcome"].items() if k != "open_prs"
        }
    return found


PHASES = (
    "cold",
    "idle_resync_silent",
    "idle_silent_share",
    "idle_resync",
    "idle_sweep",
    "idle_warm",
    "cold_restart",
)


def measured_phases(runs: list[dict[str, Any]]) -> list[str]:
    """The phases every run measured (``--cold-only``: the cold start and restart)."""
    return [p for p in PHASES if all(p in r for r in runs)]


def growth(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """CPU and wall time per strategy at each size, and the log-log slope of the CPU end
    to end (1: linear)."""
    import math

    def cpu(r: dict[str, Any], phase: str) -> float:
        return float(r[phase]["cpu_s"])

    out: dict[str, Any] = {}
    for phase in measured_phases(runs):
        per = {str(r["strategies"]): round(cpu(r, phase) / r["strategies"] * 1000, 3) for r in runs}
        walls = {
            str(r["strategies"]): round(r[phase]["wall_s"] / r["strategies"] * 1000, 3)
            for r in runs
        }
        first, last = runs[0], runs[-1]
        slope = None
        if len(runs) > 1 and cpu(first, phase) > 0 and cpu(last, phase) > 0:
            slope = round(
                math.log(cpu(last, phase) / cpu(first, phase))
                / math.log(last["strategies"] / first["strategies"]),
                2,
            )
        out[phase] = {"cpu_ms_per_strategy": per, "wall_ms_per_strategy": walls, "exponent": slope}
    per_mb = {str(r["strategies"]): r["peak_rss_mb"] for r in runs}
    out["peak_rss_mb"] = per_mb
    return out


def summary(
    runs: list[dict[str, Any]], hubs: list[dict[str, Any]], grown: dict[str, Any]
) -> list[str]:
    def line(label: str, x: dict[str, Any]) -> str:
        charged = f"  charged {x['github_charged']}" if "github_charged" in x else ""
        return (
            f"  {label:<22} {x['wall_s']:>7.2f} s (CPU {x['cpu_s']:>6.1f} s)"
            f"  fetches {x['git_fetches']:>4}"
            f"  ls-remotes {x['git_ls_remotes']:>5}  SCM calls {x['scm_calls']:>6}"
            f" (writes {x['scm_writes']}){charged}  reconciles {x['reconciles']}"
        )

    lines = []
    for r, hub in zip(runs, hubs, strict=False):
        lines.append(
            f"N={r['strategies']:>5} ({r['environments']} environments, {r['repositories']} repos,"
            f" {r['workers']} workers; repos built in {r['build_s']:.1f}s)"
        )
        labels = (
            ("cold", "cold, first start"),
            ("idle_resync_silent", "idle resync, silent"),
            ("idle_silent_share", "its share, at once"),
            ("idle_resync", "idle resync (timer)"),
            ("idle_sweep", "its sweep, at once"),
            ("idle_warm", "idle, all woken"),
            ("cold_restart", "cold restart"),
        )
        lines += [line(label, r[phase]) for phase, label in labels if phase in r]
        lines.append(
            f"  peak RSS {r['peak_rss_mb']:.0f} MB (first start {r['peak_rss_first_start_mb']:.0f},"
            f" restart {r['peak_rss_restart_mb']:.0f}); states {r['outcome']['states']};"
            f" open PRs {r['outcome']['open_prs']}; errors {r['outcome']['errors']}"
        )
        if hub:
            lines.append(line("GitHub cold start", hub["cold"]))
            pairs = zip(hub["idle_resync_silent"], hub["idle_silent_share"], strict=True)
            for n, (x, y) in enumerate(pairs, 1):
                lines.append(line(f"GitHub idle, silent {n}", x))
                lines.append(line("its share, at once", y))
            for n, (x, y) in enumerate(zip(hub["idle_resync"], hub["idle_sweep"], strict=True), 1):
                lines.append(line(f"GitHub idle resync {n}", x))
                lines.append(line("its sweep, at once", y))
    for phase in measured_phases(runs):
        g = grown[phase]
        lines.append(
            f"{phase}: CPU ms per strategy {g['cpu_ms_per_strategy']}; CPU ~ N^{g['exponent']}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, action="append", help="strategies (repeatable)")
    parser.add_argument("--repos", type=int, default=50, help="repositories shared by strategies")
    parser.add_argument("--workers", type=int, default=0, help="reconcile workers (0: default)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per resync")
    parser.add_argument("--no-github", action="store_true", help="skip the GitHub plugin's runs")
    parser.add_argument(
        "--cold-only",
        action="store_true",
        help="the cold start and the cold restart alone (no idle phases, no GitHub runs)",
    )
    parser.add_argument(
        "--child", choices=("local", "restart", "github"), help="(internal) one run here"
    )
    parser.add_argument("--root", help="(internal) the directory the local run leaves")
    args = parser.parse_args(argv)
    sizes = sorted(args.size or DEFAULT_SIZES)
    if args.child:
        measured = {"local": measure, "restart": measure_restart, "github": measure_github}[
            args.child
        ]
        common.report(measured(sizes[0], args), [])
        return 0
    runs, hubs = [], []
    for size in sizes:
        child = [__file__, "--size", str(size), "--repos", str(args.repos)]
        child += ["--workers", str(args.workers), "--timeout", str(args.timeout)]
        runs.append(measure_local(size, args))
        hubs.append(
            None
            if args.no_github or args.cold_only
            else common.run_child([*child, "--child", "github"], timeout=args.timeout * 3 + 300)
        )
    grown = growth(runs)
    judged = {str(r["strategies"]): checks(r, h) for r, h in zip(runs, hubs, strict=True)}
    exponents = [grown[p]["exponent"] for p in measured_phases(runs)]
    flat = None
    if len(runs) > 1 and runs[0]["strategies"] <= 1000 and runs[-1]["strategies"] >= TARGET_SIZE:
        flat = all(e is not None and e <= TARGETS["flat_growth_exponent"] for e in exponents)
    passed = judged.get(str(TARGET_SIZE))
    if passed is not None and flat is not None:
        passed = {**passed, "flat_growth": flat}
    ceiling = next((r for r in runs if r["strategies"] == CEILING_SIZE), None)
    if passed is not None and ceiling is not None:
        passed = {
            **passed,
            "ceiling_cold_cpu_s": ceiling["cold"]["cpu_s"] <= TARGETS["ceiling_cold_cpu_s"],
            "ceiling_cold_restart_cpu_s": ceiling["cold_restart"]["cpu_s"]
            <= TARGETS["ceiling_cold_cpu_s"],
            "ceiling_peak_rss_mb": ceiling["peak_rss_mb"] <= TARGETS["ceiling_peak_rss_mb"],
            "ceiling_no_errors": ceiling["outcome"]["errors"] == 0,
        }
    figures = {
        "bench": "resync_scale",
        "runs": runs,
        "github": hubs,
        "growth": grown,
        "targets": TARGETS,
        "checks": judged,
        "pass": passed,
    }
    lines = summary(runs, hubs, grown)
    if passed is not None:
        lines.append(
            f"targets at N={TARGET_SIZE}: "
            + "  ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in passed.items())
        )
    common.report(figures, lines)
    return 0 if passed is None or all(passed.values()) else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
