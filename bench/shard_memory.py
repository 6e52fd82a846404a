"""What every sharded replica keeps of the whole fleet, per strategy, whatever its share.

Each replica watches every PromotionStrategy (its cache holds the objects, status
included) and assembles the whole Config from them (to weigh the shards and route
webhooks). This builds N strategies of four environments as the watch cache holds them,
with the status a reconcile writes, then the Config, and reports the RSS each adds per
strategy, with and without the status kept, and the JSON size a LIST sends per object.

    python bench/shard_memory.py [--strategies 10000]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import common

from promoter.config import Config
from promoter.kube import SecretFiles, assemble, object_key

ENVIRONMENTS = ("dev", "staging", "prod-eu", "prod-us")
GROUP = "promoter.argoproj.io/v1alpha1"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def environment_status(env: str, i: int) -> dict[str, Any]:
    def sha(k: int) -> str:
        return f"{i * 7 + k:040x}"

    phase = {"phase": "success", "description": "1/1 gates success"}
    return {
        "branch": f"app-{i}/{env}",
        "state": "up-to-date",
        "reason": "running the proposed commit",
        "active": {"drySha": sha(1), "hydratedSha": sha(2), "commitStatus": phase},
        "proposed": {"drySha": sha(1), "hydratedSha": sha(3), "commitStatus": phase},
        "lastHealthyDryShas": [{"sha": sha(k), "time": "2024-01-01T00:00:00Z"} for k in range(5)],
        "holds": [],
    }


def strategy(i: int, repos: int, *, status: bool) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": GROUP,
        "kind": "PromotionStrategy",
        "metadata": {
            "name": f"app-{i}",
            "namespace": "ns",
            "resourceVersion": str(i),
            "uid": f"{i:032x}",
            "generation": 1,
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "annotations": {"promoter.argoproj.io/refreshedAt": "2024-01-01T00:00:00.000000Z"},
        },
        "spec": {
            "gitRepositoryRef": {"name": f"repo-{i % repos}"},
            "activeCommitStatuses": [{"key": "argocd-health"}],
            "proposedCommitStatuses": [{"key": "ci"}],
            "environments": [{"branch": f"app-{i}/{env}"} for env in ENVIRONMENTS],
        },
    }
    if status:
        ready = {"type": "Ready", "status": "True", "reason": "Reconciled", "message": ""}
        obj["status"] = {
            "observedGeneration": 1,
            "conditions": [{**ready, "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "environments": [environment_status(env, i) for env in ENVIRONMENTS],
        }
    return json.loads(json.dumps(obj))  # as a watch decodes it: no shared strings


def measure(n: int, *, status: bool) -> dict[str, float]:
    repos = max(1, n // 20)
    before = rss_mb()
    objects: dict[Any, dict[str, Any]] = {}
    provider = {
        "apiVersion": GROUP,
        "kind": "ScmProvider",
        "metadata": {"name": "local", "namespace": "ns"},
        "spec": {"local": {}},
    }
    objects[object_key(provider)] = provider
    for r in range(repos):
        spec = {"url": f"https://github.com/org/repo-{r}.git", "scmProviderRef": {"name": "local"}}
        repo = {"apiVersion": GROUP, "kind": "GitRepository", "spec": spec}
        repo["metadata"] = {"name": f"repo-{r}", "namespace": "ns"}
        objects[object_key(repo)] = repo
    for i in range(n):
        obj = strategy(i, repos, status=status)
        objects[object_key(obj)] = obj
    gc.collect()
    cached = rss_mb()
    secrets = SecretFiles(Path(tempfile.mkdtemp()), lambda namespace, name: {})
    assembled = assemble(Config(), objects, secrets)
    gc.collect()
    built = rss_mb()
    assert len(assembled.config.promotion_strategies) == n, assembled.problems
    return {
        "cache_kb": round((cached - before) * 1024 / n, 1),
        "config_kb": round((built - cached) * 1024 / n, 1),
        "json_bytes": len(json.dumps(strategy(0, repos, status=status))),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--strategies", type=int, default=10_000)
    p.add_argument("--child", choices=("status", "spec"), help="(internal) one run here")
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.strategies, status=args.child == "status")))
        return 0
    n = str(args.strategies)
    runs = {
        kind: common.run_child([__file__, "--strategies", n, "--child", kind], timeout=600)
        for kind in ("status", "spec")
    }
    figures = {"bench": "shard_memory", "strategies": args.strategies, **runs}
    common.report(
        figures,
        [
            f"per strategy of the whole fleet, on every replica ({n} strategies, 4 environments):",
            f"  watch cache {runs['status']['cache_kb']} KB with its status,"
            f" {runs['spec']['cache_kb']} KB without;"
            f" assembled Config {runs['status']['config_kb']} KB",
            f"  a LIST sends {runs['status']['json_bytes']} bytes per object",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(common.run(main))
