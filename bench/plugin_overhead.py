"""Per-call overhead of an out-of-process plugin: the local SCM in process vs over stdio.

The same plugin code (``scm_plugins.local``) is called in process (``LocalScm``) and
out of process (``ExternalScm`` running ``python -m scm_plugins.local --plugin``):
the difference per call is what ``promoter.scm/v1`` costs (JSON encoding both ways,
two pipe hops, validation of the answer with pydantic, the reader thread's hand-off).
Three calls, each ``--calls`` times after a warm-up: ``get_commit_statuses`` (a
SQLite read, the cheapest), ``set_commit_status`` (a write) and
``find_open_pull_request`` (SQLite plus one git command, the most expensive). Also
measured: calls from 4 threads at once through the one plugin process.

    python bench/plugin_overhead.py [--calls 2000]

Target: at most 1 ms of overhead per call (median), far below a remote SCM's
round trip (50-300 ms).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import common

TARGET_OVERHEAD_MS = 1.0


def timed(call: Callable[[], object], n: int) -> list[float]:
    for _ in range(min(n, 50)):
        call()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def run(calls: int) -> dict[str, Any]:
    from promoter.cli.sandbox import commit_files, init_bare
    from promoter.config import ExternalPlugin, LocalProvider, Repository, ScmProvider
    from promoter.models import CommitStatus, Phase
    from scm_plugins.external import ExternalScm
    from scm_plugins.local import LocalScm

    root = Path(tempfile.mkdtemp(prefix="bench-plugin-"))
    bare = init_bare(root / "r.git")
    commit_files(bare, "main", {"a.txt": "a\n"}, "base")
    head = commit_files(bare, "next", {"a.txt": "b\n"}, "head")
    repo = Repository(name="r", url=str(bare), scm_provider="p")
    inproc = LocalScm(
        provider=ScmProvider(name="p", local=LocalProvider()), state_dir=str(root / "in")
    )
    command = [sys.executable, "-m", "scm_plugins.local", "--plugin"]
    outproc = ExternalScm(
        provider=ScmProvider(name="p", plugin=ExternalPlugin(command=command)),
        state_dir=str(root / "out"),
    )
    status = CommitStatus(key="ci", phase=Phase.SUCCESS)
    results: dict[str, Any] = {}
    try:
        for plugin in (inproc, outproc):
            plugin.open_pull_request(
                repo=repo, head="next", base="main", title="t", body="", labels=()
            )
        ops: dict[str, Callable[[Any], Callable[[], object]]] = {
            "get_commit_statuses": lambda p: lambda: p.get_commit_statuses(repo=repo, sha=head),
            "set_commit_status": lambda p: (
                lambda: p.set_commit_status(repo=repo, sha=head, status=status)
            ),
            "find_open_pull_request": lambda p: (
                lambda: p.find_open_pull_request(repo=repo, head="next", base="main")
            ),
        }
        for name, make in ops.items():
            a = statistics.median(timed(make(inproc), calls))
            b_samples = timed(make(outproc), calls)
            b = statistics.median(b_samples)
            results[name] = {
                "in_process_ms": round(a, 4),
                "out_of_process_ms": round(b, 4),
                "overhead_ms": round(b - a, 4),
                "out_of_process_p99_ms": round(common.percentile(b_samples, 99), 4),
            }
        read = ops["get_commit_statuses"](outproc)
        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda _: read(), range(calls)))
        results["threads_4_per_call_ms"] = round((time.perf_counter() - started) * 1000 / calls, 4)
    finally:
        inproc.close()
        outproc.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    common.quiet_logs()
    results = run(args.calls)
    worst = max(v["overhead_ms"] for v in results.values() if isinstance(v, dict))
    figures = {
        "bench": "plugin_overhead",
        "calls": args.calls,
        "overhead_ms": results,
        "worst_overhead_ms": worst,
        "machine": common.machine(),
    }
    summary = [f"per call, median of {args.calls} (ms): in process / out of process / overhead"]
    for name, v in results.items():
        if isinstance(v, dict):
            summary.append(
                f"  {name:<24} {v['in_process_ms']:8.3f} {v['out_of_process_ms']:8.3f} "
                f"{v['overhead_ms']:8.3f}  (p99 out of process {v['out_of_process_p99_ms']:.3f})"
            )
    summary.append(
        f"  4 threads through one plugin: {results['threads_4_per_call_ms']:.3f} ms/call"
    )
    summary.append(
        f"target: overhead <= {TARGET_OVERHEAD_MS} ms per call: "
        + ("met" if worst <= TARGET_OVERHEAD_MS else "MISSED")
    )
    common.report(figures, summary)
    return 0 if worst <= TARGET_OVERHEAD_MS else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
