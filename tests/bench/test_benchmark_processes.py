"""A benchmark run by hand ends everything it started (``bench/common.py``'s ``run``):
stopped by SIGTERM, or returning with a server still up, it ends its children, and the
processes whose parent died before them (they are its orphans: it is their subreaper),
which no process group reaches when they made a session of their own."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import suppress
from pathlib import Path

import pytest

from tests import processes
from tests.support import wait_for

BENCH = Path(__file__).resolve().parents[2] / "bench"

BENCHMARK = """
import subprocess, sys, time
from pathlib import Path

sys.path.insert(0, {bench!r})
import common

SLEEP = "import time; time.sleep(600)"
ORPHANER = (  # starts a sleeper in a session of its own, writes its pid, and exits
    "import subprocess, sys; "
    "p = subprocess.Popen([sys.executable, '-c', {sleep!r}], start_new_session=True, "
    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
    "print(p.pid)"
)
PIDS = Path(sys.argv[1])


def main() -> int:
    server = subprocess.Popen([sys.executable, "-c", SLEEP], start_new_session=True)
    orphaner = subprocess.run(
        [sys.executable, "-c", ORPHANER], capture_output=True, text=True, check=True
    )
    PIDS.with_suffix(".new").write_text(f"{{server.pid}} {{orphaner.stdout.strip()}}")
    PIDS.with_suffix(".new").rename(PIDS)  # read whole, or not at all
    while sys.argv[2] == "hangs" or not PIDS.with_name("go").exists():
        time.sleep(0.02)
    return 0


sys.exit(common.run(main))
"""


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: it only waits to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a subreaper is Linux's")
@pytest.mark.parametrize("ending", ["hangs", "returns"])
def test_a_benchmark_ends_its_children_and_their_orphans_however_it_ends(
    tmp_path: Path, ending: str
) -> None:
    script = tmp_path / "benchmark.py"
    script.write_text(BENCHMARK.format(bench=str(BENCH), sleep="import time; time.sleep(600)"))
    pids = tmp_path / "pids"
    with processes.started([sys.executable, str(script), str(pids), ending]) as bench:
        wait_for(pids.is_file, what="the pids of what the benchmark started")
        left = [int(pid) for pid in pids.read_text().split()]
        try:
            assert all(running(pid) for pid in left)
            if ending == "hangs":
                os.kill(bench.pid, signal.SIGTERM)  # the benchmark alone, not its group
            else:
                (tmp_path / "go").touch()
            bench.wait(timeout=120)
            assert [pid for pid in left if running(pid)] == []
        finally:  # sessions of their own: the benchmark's group does not hold them
            for pid in filter(running, left):
                with suppress(OSError):  # gone meanwhile
                    if b"sleep(600)" in Path(f"/proc/{pid}/cmdline").read_bytes():
                        os.kill(pid, signal.SIGKILL)
