"""A replica joining warms up (clones its shards' repositories) at a lower CPU priority,
it and the git processes it starts, while the rest of the process keeps its own: in a
rolling update it shares the node's cores with the replicas that are serving."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from promoter.config import Repository
from promoter.git import GitMirror
from promoter.git.pool import MirrorPool
from promoter.kube.shards.transfer import BACKGROUND_NICE, background_priority
from tests.kube.cluster import fake_cluster, wait_until
from tests.kube.shard_helpers import fleet

CHILD_NICE = [sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"]


def thread_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def expected(base: int) -> int:
    return min(19, base + BACKGROUND_NICE)


def test_the_lower_priority_is_the_calling_threads_and_its_childrens_only() -> None:
    base = thread_nice()
    seen: dict[str, int] = {}

    def lowered() -> None:
        background_priority()
        seen["thread"] = thread_nice()
        seen["child"] = int(subprocess.run(CHILD_NICE, capture_output=True, text=True).stdout)

    worker = threading.Thread(target=lowered)
    worker.start()
    worker.join(10)
    assert seen == {"thread": expected(base), "child": expected(base)}
    assert thread_nice() == base
    assert int(subprocess.run(CHILD_NICE, capture_output=True, text=True).stdout) == base


def test_a_joining_replica_fetches_its_repositories_at_the_lower_priority_and_serves_at_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = thread_nice()
    fetched: list[tuple[str, int]] = []
    fresh = MirrorPool.fresh

    def recorded(self: MirrorPool, repo: Repository) -> GitMirror:
        fetched.append((threading.current_thread().name, thread_nice()))
        return fresh(self, repo)

    monkeypatch.setattr(MirrorPool, "fresh", recorded)
    with fake_cluster(tmp_path) as cluster:
        fleet(cluster, tmp_path, 3)
        a = cluster.sharded("a")
        wait_until(a.ready, what="a joined")
        warm = [nice for name, nice in fetched if name.startswith("warm-up")]
        assert len(warm) == 3 and set(warm) == {expected(base)}
        wait_until(
            lambda: any(not name.startswith("warm-up") for name, _ in fetched),
            what="a reconcile's fetch",
        )
        served = {nice for name, nice in fetched if not name.startswith("warm-up")}
        assert served == {base}
