"""A stopped runtime leaves nothing running, whether it was started or not: the delivery
log's writer thread, the plugins' processes, the mirrors' ``cat-file`` and the
watchdog end with it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from promoter.wiring import Daemon
from tests import processes
from tests.support import GitOpsRepo, local_config, wait_for

OURS = ("promoter-delivery-log", "promoter-watchdog", "promoter-worker")


def ours() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith(OURS))


def children() -> list[str]:
    return sorted(processes.children(os.getpid()).values())


def test_a_runtime_built_and_never_started_leaves_no_thread_or_process_once_stopped(
    tmp_path: Path,
) -> None:
    threads_before, children_before = ours(), children()
    daemon = Daemon(local_config(GitOpsRepo.create(tmp_path).path, tmp_path / "state"))
    runtime = daemon.runtime
    assert "promoter-delivery-log" in ours()  # the webhooks' delivery log, opened at once
    runtime.reconciler.preview("guestbook")  # reads the mirror: its cat-file runs
    assert any("cat-file" in c for c in children())
    runtime.stop()
    wait_for(lambda: ours() == threads_before, what="the runtime's threads to end")
    wait_for(lambda: children() == children_before, what="the mirror's processes to end")
    runtime.stop()  # a second stop does nothing


def test_a_runtime_started_and_stopped_leaves_no_thread_or_process(tmp_path: Path) -> None:
    threads_before, children_before = ours(), children()
    daemon = Daemon(local_config(GitOpsRepo.create(tmp_path).path, tmp_path / "state"))
    runtime = daemon.runtime
    runtime.start()
    wait_for(lambda: runtime.queue.idle() and runtime.view("guestbook"), what="a reconcile")
    assert "promoter-watchdog" in ours()
    runtime.stop()
    wait_for(lambda: ours() == threads_before, what="the runtime's threads to end")
    wait_for(lambda: children() == children_before, what="the mirror's processes to end")
