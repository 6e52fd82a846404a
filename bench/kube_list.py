"""What a starting replica's LIST of every PromotionStrategy costs it, whole or in pages.

The Kubernetes API stand-in, in a process of its own, holds N strategies of four
environments with the status a reconcile writes (``bench/shard_memory.py``'s, about
4.6 KB of JSON each). A fresh process lists them as the replica's watch does
(``Kube.list``), once in one response (``limit`` unset) and once in pages of
``LIST_PAGE``, and reports the time, the requests and the process's peak RSS above
what it held before the list, and what stays once the objects are kept.

    python bench/kube_list.py [--strategies 20000]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path

import common
from shard_cluster import stand_in
from shard_memory import rss_mb, strategy

NAMESPACE = "bench"
PLURAL = "promotionstrategies"


def child(url: str, page: int) -> dict[str, float]:
    """One list in this process: its time, peak RSS above the start, RSS kept."""
    from promoter.kube import Kube, loopback_client

    kube = Kube(loopback_client(url))
    kube._list_page(PLURAL, NAMESPACE, 1, "")  # the connection and the imports, first
    gc.collect()
    before = rss_mb()
    started = time.perf_counter()
    listed = kube.list(PLURAL, NAMESPACE, page=page)
    took = time.perf_counter() - started
    gc.collect()
    return {
        "objects": len(listed["items"]),
        "seconds": round(took, 2),
        "peak_above_mb": round(common.peak_rss_mb() - before, 1),
        "kept_mb": round(rss_mb() - before, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--strategies", type=int, default=20_000)
    p.add_argument("--url", help="(internal) list from this stand-in here")
    p.add_argument("--page", type=int, default=0, help="(internal) the page size")
    args = p.parse_args(argv)
    if args.url:
        print(json.dumps(child(args.url, args.page)))
        return 0
    from promoter.kube import LIST_PAGE

    objects = []
    for i in range(args.strategies):
        obj = strategy(i, max(1, args.strategies // 20), status=True)
        obj["metadata"]["namespace"] = NAMESPACE
        objects.append(obj)
    size = len(json.dumps(objects[0]))
    with (
        tempfile.TemporaryDirectory(prefix="bench-kube-list-") as root,
        stand_in(Path(root), objects) as url,
    ):
        runs = {}
        for name, page in (("whole", 0), ("paged", LIST_PAGE)):
            args_ = [__file__, "--url", url, "--page", str(page)]
            runs[name] = common.run_child(args_, timeout=900)
    figures = {
        "bench": "kube_list",
        "strategies": args.strategies,
        "json_bytes_per_object": size,
        "page": LIST_PAGE,
        **runs,
        "machine": common.machine(),
    }
    common.report(
        figures,
        [
            f"{args.strategies} PromotionStrategies of {size} bytes of JSON each",
            *(
                f"{name}: {r['objects']} listed in {r['seconds']} s, peak RSS"
                f" +{r['peak_above_mb']} MB, kept +{r['kept_mb']} MB"
                for name, r in runs.items()
            ),
        ],
    )
    whole, paged = runs["whole"], runs["paged"]
    return 0 if whole["objects"] == paged["objects"] == args.strategies else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
