"""The daemon gives freed memory back to the system once it rests after work: once per
burst, not while a reconcile runs, not twice within the spacing; and glibc's
``malloc_trim`` really lowers the RSS of a heap that a burst left full of holes."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from starlette.testclient import TestClient

from promoter.daemon.memory.trim import MemoryTrim
from promoter.tuning import libc_trim
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for


class Daemonish:
    """The queue's idleness and its count of finished reconciles, and a clock, set by hand."""

    def __init__(self) -> None:
        self.now = 0.0
        self.idle = True
        self.finished = 0
        self.trimmed_at: list[float] = []

    def trim(self) -> int:
        self.trimmed_at.append(self.now)
        return 1

    def memory(self, *, with_trim: bool = True) -> MemoryTrim:
        return MemoryTrim(
            idle=lambda: self.idle,
            finished=lambda: self.finished,
            trim=self.trim if with_trim else None,
            clock=lambda: self.now,
            rest=1.0,
            spacing=30.0,
        )

    def tick_at(self, memory: MemoryTrim, *times: float) -> None:
        for at in times:
            self.now = at
            memory.tick()


def test_memory_is_given_back_once_the_queue_has_rested_a_second_after_a_burst() -> None:
    d = Daemonish()
    memory = d.memory()
    d.idle = False
    for second in range(1, 40):  # a burst: reconciles finish every second
        d.finished += 3
        d.tick_at(memory, float(second))
    assert d.trimmed_at == []
    d.idle = True  # the last reconcile finished at 39
    d.tick_at(memory, 39.5)  # less than the rest since the count last moved
    assert d.trimmed_at == []
    d.tick_at(memory, 40.0, 41.0, 60.0, 200.0)
    assert d.trimmed_at == [40.0]  # once: no new work since
    assert memory.trims == 1


def test_a_long_reconcile_in_flight_is_not_rest() -> None:
    d = Daemonish()
    memory = d.memory()
    d.finished, d.idle = 4, False  # a reconcile runs for minutes, nothing finishes
    d.tick_at(memory, 1.0, 2.0, 5.0, 100.0)
    assert d.trimmed_at == []
    d.idle = True
    d.tick_at(memory, 101.0)
    assert d.trimmed_at == [101.0]


def test_a_trickle_of_work_is_trimmed_at_most_once_every_spacing() -> None:
    d = Daemonish()
    memory = d.memory()
    d.finished = 1
    d.tick_at(memory, 1.0, 2.0)
    assert d.trimmed_at == [2.0]
    for second in range(3, 70):  # one webhook's reconcile every third second
        if second % 3 == 0:
            d.finished += 1
        d.tick_at(memory, float(second))
    assert d.trimmed_at == [2.0, 32.0, 62.0]


def test_without_malloc_trim_in_the_c_library_nothing_is_done() -> None:
    d = Daemonish()
    memory = d.memory(with_trim=False)
    d.finished = 5
    d.tick_at(memory, 1.0, 2.0, 3.0, 50.0)
    assert memory.trims == 0 and d.trimmed_at == []


HOLES = textwrap.dedent(
    """
    import json, sys
    from promoter.daemon.memory.trim import MemoryTrim
    from promoter.tuning import libc_trim

    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024

    blocks = [bytes(4000) + bytes([n % 256]) for n in range(40_000)]  # 160 MB from malloc
    kept = blocks[::100]  # one block in a hundred stays, up to the heap's top
    del blocks
    before = rss_mb()
    memory = MemoryTrim(idle=lambda: True, finished=lambda: 1, trim=libc_trim(), rest=0.0)
    memory.tick()
    after = rss_mb()
    print(json.dumps({"before": before, "after": after, "trims": memory.trims, "kept": len(kept)}))
    """
)


GLIBC = platform.libc_ver()[0] == "glibc"


def test_malloc_trim_is_found_in_glibc_and_only_there() -> None:
    assert (libc_trim() is not None) == GLIBC


def test_a_heap_a_burst_left_full_of_holes_is_given_back_to_the_system() -> None:
    """Freeing blocks below one that stays leaves their pages in the process; the trim
    gives them back (without it RSS stays where it was). Elsewhere than glibc, the
    trim does nothing and the pages stay."""
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", HOLES], cwd=root, capture_output=True, text=True, check=True
    )
    figures = json.loads(out.stdout)
    assert figures["kept"] == 400
    assert figures["before"] > 120, figures  # the holes are still the process's pages
    if GLIBC:
        assert figures["trims"] == 1 and figures["after"] < figures["before"] - 100, figures
    else:
        assert figures["trims"] == 0


def test_the_running_daemon_gives_memory_back_after_its_first_resync(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    memory = daemon.runtime.memory
    with TestClient(daemon.app):
        wait_for(lambda: daemon.runtime.queue.finished > 0, timeout=20)
        wait_for(lambda: daemon.runtime.queue.idle(), timeout=20)
        wait_for(lambda: memory.trims == int(GLIBC), timeout=10)
        settled = daemon.runtime.queue.finished
        time.sleep(2.5)  # ticks with no new work: no second trim
        assert memory.trims == int(GLIBC) or daemon.runtime.queue.finished != settled
