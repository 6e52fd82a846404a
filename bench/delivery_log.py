"""The webhook delivery log past its memory bound: what each new delivery costs.

A busy installation receives more deliveries in the retention window (two days by
default) than the log keeps in memory (100,000): from then on the older ids are only in
SQLite. This records ``--ids`` GitHub-shaped delivery ids (``github:<uuid4>``, as
``X-GitHub-Delivery`` is) the way the receiver does, one ``record`` and one ``persist``
each on this thread, with the log's writer thread batching them into SQLite, and prints,
slice by slice, the recording thread's time per id (what the event loop would spend),
the process's CPU per id (the writer's SQLite work included) and the SQLite lookups the
recording thread made. Then it records every old id again and checks that each one is
recognised as a duplicate.

    python bench/delivery_log.py [--ids 250000] [--memory 100000] [--slice 25000]

Targets: past the bound, the recording thread's time per id at most 2 x its figure while
every id fits in memory, and at most 2 % of new ids looked up in SQLite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import common

from webhooks.deliveries.log import DeliveryLog

TARGET_RATIO = 2.0
TARGET_LOOKUPS = 0.02


def measure(ids: int, memory: int, size: int, directory: Path) -> dict[str, Any]:
    log = DeliveryLog(directory / "deliveries.sqlite3", memory_limit=memory)
    lookups = [0]
    contains = log._store.contains

    def counted(delivery_id: str) -> bool:
        lookups[0] += 1
        return contains(delivery_id)

    log._store.contains = counted  # type: ignore[method-assign]
    names = [f"github:{uuid.uuid4()}" for _ in range(ids)]
    slices = []
    for start in range(0, ids, size):
        chunk = names[start : start + size]
        before_lookups = lookups[0]
        cpu, wall = time.process_time(), time.perf_counter()
        for delivery_id in chunk:
            if not log.record(delivery_id):
                raise SystemExit(f"{delivery_id} taken for a duplicate")
            log.persist()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        slices.append(
            {
                "from": start,
                "past_bound": start >= memory,
                "recording_us_per_id": round(wall / len(chunk) * 1e6, 1),
                "cpu_us_per_id": round(cpu / len(chunk) * 1e6, 1),
                "lookups": lookups[0] - before_lookups,
            }
        )
        print(
            f"  ids {start:>7,}-{start + len(chunk):>7,}: {slices[-1]['recording_us_per_id']:6.1f}"
            f" us recording, {slices[-1]['cpu_us_per_id']:6.1f} us CPU per id,"
            f" {slices[-1]['lookups']:>5} lookups",
            file=sys.stderr,
        )
    started = time.perf_counter()
    missed = sum(log.record(delivery_id) for delivery_id in names)
    again_s = time.perf_counter() - started
    log.close()
    return {"slices": slices, "duplicates_missed": missed, "again_us_per_id": again_s / ids * 1e6}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", type=int, default=250_000)
    parser.add_argument("--memory", type=int, default=100_000)
    parser.add_argument("--slice", type=int, default=25_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="delivery-log-bench-") as directory:
        result = measure(args.ids, args.memory, args.slice, Path(directory))
    slices = result["slices"]
    within = [s["recording_us_per_id"] for s in slices if not s["past_bound"]]
    past = [s for s in slices if s["past_bound"]]
    in_memory = statistics.median(within) if within else 0.0
    worst = max((s["recording_us_per_id"] for s in past), default=0.0)
    looked_up = sum(s["lookups"] for s in past) / max(1, args.ids - args.memory)
    checks = {
        "recording": bool(past) and worst <= TARGET_RATIO * in_memory,
        "lookups": bool(past) and looked_up <= TARGET_LOOKUPS,
        "duplicates": result["duplicates_missed"] == 0,
    }
    figures = {
        "bench": "delivery_log",
        "ids": args.ids,
        "memory_limit": args.memory,
        "in_memory_us_per_id": in_memory,
        "worst_past_bound_us_per_id": worst,
        "lookups_per_new_id_past_bound": round(looked_up, 4),
        "duplicates_missed": result["duplicates_missed"],
        "again_us_per_id": round(result["again_us_per_id"], 1),
        "slices": slices,
        "machine": common.machine(),
        "pass": checks,
    }
    common.report(
        figures,
        [
            f"{args.ids:,} new ids, {args.memory:,} in memory: recording {in_memory:.1f} us per id"
            f" while all fit, at worst {worst:.1f} us past the bound"
            f" ({worst / in_memory if in_memory else 0:.2f} x; target <= {TARGET_RATIO:.0f} x)",
            f"SQLite lookups past the bound: {looked_up:.2%} of new ids"
            f" (target <= {TARGET_LOOKUPS:.0%})",
            f"every id again: {result['duplicates_missed']} not recognised as a duplicate,"
            f" {result['again_us_per_id']:.1f} us per id",
            f"load average {common.machine()['load_average']} on {common.machine()['cpus']} CPUs",
            "  ".join(f"{name} {'ok' if ok else 'MISSED'}" for name, ok in checks.items()),
        ],
    )
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
