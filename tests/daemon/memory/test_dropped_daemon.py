"""A daemon stopped and dropped leaves nothing behind: its runtime, caches, views and
mirrors are freed once the last reference goes (a restart in the same process, as
Kubernetes mode does when the configuration changes, must not hold two daemons' state),
and none of its threads is left running."""

from __future__ import annotations

import gc
import threading
import weakref
from pathlib import Path
from typing import Any

from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for


def _run_and_drop(tmp_path: Path) -> tuple[list[weakref.ref[Any]], set[int]]:
    """Run a daemon until it has reconciled and rested, stop it; weak references to its
    parts, and the threads it started. Its runtime is started and stopped as the app's
    lifespan does, without the app's thread pool (a test client's worker thread keeps
    the last function it ran until it is reused)."""
    gitops = GitOpsRepo.create(tmp_path)
    before = {t.ident for t in threading.enumerate()}
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    runtime = daemon.runtime
    runtime.start()
    try:
        wait_for(lambda: runtime.queue.finished > 0 and runtime.queue.idle(), timeout=30)
        assert runtime.reconciler.all_views()
        started = {t.ident for t in threading.enumerate()} - before
    finally:
        runtime.stop()
    parts = [
        daemon,
        daemon.app,
        runtime,
        runtime.reconciler,
        runtime.status_cache,
        runtime.pr_cache,
        runtime.ledger,
        runtime.mirrors,
        runtime.queue,
        runtime.settled,
        runtime.probes,
        runtime.scheduler,
        *runtime.plugins.values(),
        *runtime.reconciler.all_views().values(),
    ]
    refs = [weakref.ref(part) for part in parts if type(part).__weakrefoffset__]
    return refs, started


def test_a_daemon_stopped_and_dropped_leaves_no_object_and_no_thread_alive(
    tmp_path: Path,
) -> None:
    refs, started = _run_and_drop(tmp_path)
    assert started  # workers and timers ran
    alive = [t.name for t in threading.enumerate() if t.ident in started and t.is_alive()]
    gc.collect()
    assert [type(ref()).__name__ for ref in refs if ref() is not None] == [], alive
    assert alive == []
