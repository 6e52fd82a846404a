"""Concurrency edges: readiness beside busy workers, and a bounded shutdown."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from promoter.daemon import Runtime, Workers, WorkQueue
from promoter.daemon.acting.outcome import Outcome
from promoter.daemon.loop.reconciler import StrategyView
from promoter.models import utcnow
from tests.support import GitOpsRepo, local_config, wait_for


class ViewWrittenWhileRead:
    """A strategy's view whose reading lets a worker remember another strategy meanwhile,
    as happens when a worker finishes while ``/readyz`` walks the views."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.snapshot = None
        self.reads = 0

    @property
    def error(self) -> str:
        self.reads += 1
        self.runtime.reconciler.views[f"late-{self.reads}"] = StrategyView(
            None, None, None, utcnow()
        )
        return "boom"


def test_readiness_reads_the_views_while_workers_add_to_them(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    runtime = Runtime(local_config(gitops.path, tmp_path / "state"), plugins={})
    racing = ViewWrittenWhileRead(runtime)
    runtime.reconciler.views["guestbook"] = racing  # type: ignore[assignment]
    ready, unreachable = runtime.readiness()  # "dictionary changed size" before
    assert unreachable == {"gitops": "boom"}
    assert not ready
    assert "late-1" in runtime.reconciler.all_views()


def test_stopping_the_workers_waits_the_timeout_in_all_not_per_thread() -> None:
    release = threading.Event()
    started: list[str] = []

    def reconcile(key: str) -> Outcome:
        started.append(key)
        release.wait(30)
        return Outcome()

    queue = WorkQueue(max_delay=1.0)
    workers = Workers(queue, reconcile, count=4)
    workers.start()
    queue.add_many(["a", "b", "c", "d"])
    wait_for(lambda: len(started) == 4 or None, what="four reconciles in flight")
    waits: list[float] = []
    for thread in workers._threads:  # each join's wait, as stop asks for it
        real = thread.join

        def join(timeout: float | None = None, real: Any = real) -> None:
            waits.append(timeout or 0.0)
            real(timeout)

        thread.join = join  # type: ignore[method-assign]
    finished = workers.stop(timeout=0.5)
    release.set()
    assert not finished
    assert len(waits) == 4 and sum(waits) <= 0.5  # 2 s before: 0.5 s for each thread
