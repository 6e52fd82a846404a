"""``promoter demo`` removes its temporary sandbox however it ends, and ``make demo``
installs the package alone, without the test extras."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import processes

ROOT = Path(__file__).resolve().parents[2]
DEMO = (sys.executable, "-m", "promoter.cli", "demo")


def sandboxes(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("promoter-demo-"))


def demo_env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp), "PYTHONUNBUFFERED": "1"}


def test_the_scripted_demo_leaves_no_sandbox_behind(tmp_path: Path) -> None:
    run = processes.run([*DEMO, "--scripted"], env=demo_env(tmp_path), text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "prod never ran the bad change" in run.stdout
    assert sandboxes(tmp_path) == []


def test_ctrl_c_stops_the_demo_and_removes_its_sandbox(tmp_path: Path) -> None:
    # stderr goes to a file and stdout is read to its end after Ctrl-C: a pipe nobody
    # reads fills up and would hold the demo in a write, not stopping, on a slow machine.
    # A suite started in the background of a shell without job control ignores SIGINT,
    # and a child inherits an ignored signal; a handled one is reset to the default in
    # the child: the demo gets SIGINT as from a terminal, however the suite was started.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        stderr = (tmp_path / "stderr.txt").open("w")
        proc = processes.start(
            DEMO, env=demo_env(tmp_path), stdout=subprocess.PIPE, stderr=stderr, text=True
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    with stderr, proc:
        try:
            assert proc.stdout is not None
            deadline = time.monotonic() + 120
            for line in proc.stdout:
                if "keeps running" in line or time.monotonic() > deadline:
                    break
            assert sandboxes(tmp_path) != []  # the sandbox exists while the demo runs
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                said = (tmp_path / "stderr.txt").read_text()[-4000:]
                pytest.fail(f"the demo was still running 60 s after Ctrl-C; it said:\n{said}")
            assert proc.returncode in (0, 130)
        finally:
            processes.end(proc)
    assert sandboxes(tmp_path) == []


def test_a_sandbox_the_user_names_is_kept(tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    run = processes.run(
        [*DEMO, "--scripted", "--dir", str(kept)], env=demo_env(tmp_path), text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert (kept / "promoter.yaml").is_file()


def test_make_demo_installs_the_package_without_the_test_extras(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planned = subprocess.run(
        ["make", "-n", "-C", str(tmp_path), "demo"], capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in planned.splitlines() if "pip install" in line and " -e " in line]
    assert installs == [".venv/bin/pip install --quiet -e ."], planned
