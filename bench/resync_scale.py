"""Resync at scale: N strategies x 4 environments over 5 shared repositories, local SCM.

For each size, in a fresh process (so that peak RSS is that size's own): build the
repositories with ``git fast-import``, seed the local SCM with a green ``health``
status on every running commit, then start the daemon with empty state and time

* the **cold resync, first start**: every strategy reconciled from nothing (mirrors
  cloned, every status and PR read, every environment's healthy commit recorded in the
  ledger, a PR opened for each pending change);
* an **idle resync**, as the periodic timer runs it (``Scheduler.resync``: statuses
  and PRs read from the SCM again, every mirror checked with ``ls-remote``);
* every strategy **woken at once** with the caches warm (a burst of webhooks);
* a **cold restart**: a new daemon whose state dir was lost (only the SCM's data and
  what was pushed to the repositories remain), reconciling everything again; it must
  reach the same verdicts.

Every 4th strategy has a new dry commit proposed for its first environment (its PR
is opened in the cold resync and stays blocked on its ``ci`` gate). Ref polling is
off, so that every git and SCM call counted belongs to the resync.

    python bench/resync_scale.py [--size 100 --size 300 --size 1000] [--repos 5]

Targets for N = 1,000: cold resync (first start and restart) <= 30 s, peak RSS
<= 500 MB; idle resyncs make no SCM write and at most one fetch per repository.
"""

from __future__ import annotations

import argparse
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

TARGETS = {"cold_s": 30.0, "peak_rss_mb": 500.0, "idle_scm_writes": 0, "idle_fetches_per_repo": 1}
TARGET_SIZE = 1000
DEFAULT_SIZES = (100, 300, 1000)


def fleet_config(fleet: Fleet, state: Path, workers: int | None) -> Any:
    from promoter.config import Config

    daemon: dict[str, Any] = {"stateDir": str(state), "resyncInterval": "1h"}
    if workers:
        daemon["workers"] = workers
    return Config.model_validate(
        {
            "scmProviders": [{"name": "local", "local": {}}],
            "repositories": [
                {
                    "name": f"gitops-{r}",
                    "url": str(fleet.repo_path(r)),
                    "scmProvider": "local",
                    "pollInterval": 0,
                }
                for r in range(fleet.repos)
            ],
            "promotionStrategies": [
                {
                    "name": f"app-{i}",
                    "repository": f"gitops-{i % fleet.repos}",
                    "activeCommitStatuses": [{"key": "health"}],
                    "proposedCommitStatuses": [{"key": "ci"}],
                    "environments": [{"branch": f"app-{i}/{env}"} for env in fleet.environments],
                }
                for i in range(fleet.strategies)
            ],
            "daemon": daemon,
        }
    )


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


def settled(runtime: Any, names: list[str], since: datetime) -> bool:
    """Every strategy reconciled since ``since`` and nothing left to do in the queue."""
    queue = runtime.queue
    if not queue.idle() or queue.waiting():
        return False
    views = runtime.reconciler.views
    return all((v := views.get(n)) is not None and v.reconciled_at >= since for n in names)


def resync(runtime: Any, names: list[str], *, how: str, timeout: float) -> dict[str, Any]:
    """One resync, its wall time and what it cost.

    ``how``: "start" (the daemon's start, which resyncs), "resync" (the periodic
    timer's job) or "wake" (every strategy enqueued with the caches as they are).
    """
    before = Counters.now()
    since = datetime.now(UTC)
    started = time.perf_counter()
    if how == "start":
        runtime.start()
    elif how == "resync":
        runtime.scheduler.resync()
    else:
        runtime.queue.add_many(names)
    common.wait_for(
        lambda: settled(runtime, names, since), timeout=timeout, what="the resync", poll=0.02
    )
    wall = time.perf_counter() - started
    spent = Counters.now() - before
    return {"wall_s": round(wall, 2), **spent.as_json()}


def outcome(runtime: Any, names: list[str]) -> dict[str, Any]:
    """What the daemon concluded: environment states, errors, open PRs."""
    states: Tally[str] = Tally()
    errors = 0
    for name in names:
        view = runtime.reconciler.views[name]
        if view.error:
            errors += 1
        if view.decision is not None:
            states.update(v.state.value for v in view.decision.environments)
    plugin = runtime.plugins["local"]
    open_prs = sum(len(plugin.store.open_pr(r.name)) for r in runtime.config.repositories)
    return {"states": dict(sorted(states.items())), "errors": errors, "open_prs": open_prs}


def measure(size: int, args: argparse.Namespace) -> dict[str, Any]:
    """One size, in this process: build, cold resync, two idle resyncs."""
    from promoter.wiring import Daemon

    common.quiet_logs()
    with tempfile.TemporaryDirectory(prefix="bench-resync-") as tmp:
        root = Path(tmp)
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
            result = outcome(runtime, names)
            idle = resync(runtime, names, how="resync", timeout=args.timeout)
            warm = resync(runtime, names, how="wake", timeout=args.timeout)
        finally:
            runtime.stop()
        # A restart that lost its state dir: only the SCM's own data (the local SCM's
        # database stands for GitHub's) and what was pushed to the repositories remain.
        for path in state.iterdir():
            if not path.name.startswith("local-scm.sqlite3"):
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        daemon = Daemon(config)
        runtime = daemon.runtime
        try:
            restart = resync(runtime, names, how="start", timeout=args.timeout)
            restarted = outcome(runtime, names)
        finally:
            runtime.stop()
    return {
        "bench": "resync_scale",
        "strategies": size,
        "environments": size * len(fleet.environments),
        "repositories": args.repos,
        "workers": config.daemon.workers,
        "build_s": round(build_s, 2),
        "cold": cold,
        "idle_resync": idle,
        "idle_warm": warm,
        "cold_restart": restart,
        "outcome": result,
        "outcome_after_restart": restarted,
        "peak_rss_mb": common.peak_rss_mb(),
        "rss_before_daemon_mb": rss_before,
        "machine": common.machine(),
    }


def checks(run: dict[str, Any]) -> dict[str, bool]:
    repos = run["repositories"]
    idle = (run["idle_resync"], run["idle_warm"])
    return {
        "cold_s": run["cold"]["wall_s"] <= TARGETS["cold_s"],
        "cold_restart_s": run["cold_restart"]["wall_s"] <= TARGETS["cold_s"],
        "peak_rss_mb": run["peak_rss_mb"] <= TARGETS["peak_rss_mb"],
        "idle_scm_writes": all(r["scm_writes"] == 0 for r in idle),
        "idle_fetches_per_repo": all(r["git_fetches"] <= repos for r in idle),
        "no_errors": run["outcome"]["errors"] == 0 and run["outcome_after_restart"]["errors"] == 0,
        "same_outcome_after_restart": run["outcome"] == run["outcome_after_restart"],
    }


def growth(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Cold and idle wall time per strategy at each size, and the log-log slope end to end."""
    import math

    out: dict[str, Any] = {}
    for phase in ("cold", "idle_resync", "idle_warm", "cold_restart"):
        per = {
            str(r["strategies"]): round(r[phase]["wall_s"] / r["strategies"] * 1000, 2)
            for r in runs
        }
        first, last = runs[0], runs[-1]
        slope = None
        if len(runs) > 1 and first[phase]["wall_s"] > 0 and last[phase]["wall_s"] > 0:
            slope = round(
                math.log(last[phase]["wall_s"] / first[phase]["wall_s"])
                / math.log(last["strategies"] / first["strategies"]),
                2,
            )
        out[phase] = {"ms_per_strategy": per, "exponent": slope}
    return out


def summary(runs: list[dict[str, Any]], grown: dict[str, Any]) -> list[str]:
    lines = []
    for r in runs:
        lines.append(
            f"N={r['strategies']:>5} ({r['environments']} environments, {r['repositories']} repos,"
            f" {r['workers']} workers; repos built in {r['build_s']:.1f}s)"
        )
        phases = (
            ("cold, first start", r["cold"]),
            ("idle resync (timer)", r["idle_resync"]),
            ("idle, all woken", r["idle_warm"]),
            ("cold restart", r["cold_restart"]),
        )
        for label, x in phases:
            lines.append(
                f"  {label:<20} {x['wall_s']:>7.2f} s  fetches {x['git_fetches']:>4}"
                f"  ls-remotes {x['git_ls_remotes']:>5}  SCM calls {x['scm_calls']:>6}"
                f" (writes {x['scm_writes']})  reconciles {x['reconciles']}"
            )
        lines.append(
            f"  peak RSS {r['peak_rss_mb']:.0f} MB; states {r['outcome']['states']};"
            f" open PRs {r['outcome']['open_prs']}; errors {r['outcome']['errors']}"
        )
    for phase, g in grown.items():
        lines.append(f"{phase}: ms per strategy {g['ms_per_strategy']}; wall ~ N^{g['exponent']}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", type=int, action="append", help="strategies (repeatable)")
    parser.add_argument("--repos", type=int, default=5, help="repositories shared by strategies")
    parser.add_argument("--workers", type=int, default=0, help="reconcile workers (0: default)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per resync")
    parser.add_argument("--child", action="store_true", help="(internal) measure one size here")
    args = parser.parse_args(argv)
    sizes = sorted(args.size or DEFAULT_SIZES)
    if args.child:
        common.report(measure(sizes[0], args), [])
        return 0
    runs = []
    for size in sizes:
        child = [__file__, "--child", "--size", str(size), "--repos", str(args.repos)]
        child += ["--workers", str(args.workers), "--timeout", str(args.timeout)]
        runs.append(common.run_child(child, timeout=args.timeout * 3 + 120))
    grown = growth(runs)
    judged = {str(r["strategies"]): checks(r) for r in runs}
    target = next((r for r in runs if r["strategies"] == TARGET_SIZE), None)
    passed = checks(target) if target is not None else None
    figures = {
        "bench": "resync_scale",
        "runs": runs,
        "growth": grown,
        "targets": TARGETS,
        "checks": judged,
        "pass": passed,
    }
    lines = summary(runs, grown)
    if passed is not None:
        lines.append(
            "targets at N=1000: "
            + "  ".join(f"{k} {'ok' if v else 'MISSED'}" for k, v in passed.items())
        )
    common.report(figures, lines)
    return 0 if passed is None or all(passed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
