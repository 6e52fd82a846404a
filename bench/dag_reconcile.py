"""Reconcile time of one strategy whose environments form a DAG of staged tiers.

One qa environment, then tiers of ``--width`` environments each, ``--environments`` in
all, on the local SCM and a real git repository. Prints the time of a cold reconcile
(mirror cloned, every ledger read), of an idle one, and of the reconcile that starts a
change's rollout (opens qa's promotion PR), each the median of ``--rounds``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import common


def config(repo: Path, state: Path, branches: list[str], width: int) -> str:
    tiers = [branches[:1]] + [branches[i : i + width] for i in range(1, len(branches), width)]
    tier_yaml = "\n".join(
        f"      - {{name: t{n}, environments: [{', '.join(t)}], maxParallel: {width}}}"
        for n, t in enumerate(tiers)
    )
    envs = "\n".join(f"      - {{branch: {b}}}" for b in branches)
    return f"""\
scmProviders: [{{name: local, local: {{}}}}]
repositories: [{{name: gitops, url: {repo}, scmProvider: local}}]
promotionStrategies:
  - name: fleet
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    environments:
{envs}
    tiers:
{tier_yaml}
daemon: {{stateDir: {state}, workers: 1}}
"""


def timed(reconcile: Any) -> float:
    """Seconds one reconcile of the strategy takes."""
    started = time.perf_counter()
    reconcile("fleet")
    return time.perf_counter() - started


def run(args: argparse.Namespace) -> dict[str, Any]:
    from promoter.cli.sandbox import GitOpsRepo
    from promoter.config.loader import parse_config
    from promoter.wiring import Daemon

    branches = [f"environment/e{i:02d}" for i in range(args.environments)]
    cold, idle, change = [], [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-dag-") as tmp:
            base = Path(tmp)
            gitops = GitOpsRepo.create(base, environments=branches)
            daemon = Daemon(parse_config(config(gitops.path, base / "state", branches, args.width)))
            reconcile = daemon.runtime.reconciler.reconcile
            cold.append(timed(reconcile))
            reconcile("fleet")
            idle.append(timed(reconcile))
            gitops.change("2.0.0", "A change for the whole fleet", branches)
            daemon.runtime.mirrors.invalidate("gitops")
            change.append(timed(reconcile))
            daemon.runtime.stop()
            for plugin in daemon.runtime.plugins.values():
                plugin.close()
    ms = {
        k: round(statistics.median(v) * 1000, 1)
        for k, v in {"cold_ms": cold, "idle_ms": idle, "change_ms": change}.items()
    }
    return {
        "bench": "dag_reconcile",
        "environments": args.environments,
        "width": args.width,
        "rounds": args.rounds,
        **ms,
        "machine": common.machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--environments", type=int, default=50)
    parser.add_argument("--width", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    common.quiet_logs()
    figures = run(args)
    common.report(
        figures,
        [
            f"{args.environments} environments in tiers of {args.width}:"
            f" cold {figures['cold_ms']} ms, idle {figures['idle_ms']} ms,"
            f" a new change {figures['change_ms']} ms (median of {args.rounds})",
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(common.run(main))
