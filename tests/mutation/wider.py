"""The survivors of ``mutmut run`` against the wider tests of their module.

``mutmut run`` gives each mutant the tests at the level where the guards live (the
directories of ``pytest_add_cli_args_test_selection``): a few seconds a mutant. The
end-to-end and SCM suites that also call these modules take minutes a mutant, so they
run for the survivors only: each survivor, switched on (``MUTANT_UNDER_TEST``), runs the
test paths ``[tool.promoter.mutation] wider`` lists for its module, until one fails.
What they kill is written to ``mutants/wider.json`` and counted as killed by
``python -m tests.mutation``; what they do not is a survivor still.

Run from the repository's root after ``mutmut run`` (``make mutate`` does it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from fnmatch import fnmatch
from pathlib import Path

RESULTS = Path("mutants/wider.json")
SURVIVED = {0, 5, 33}
"""mutmut's exit codes of a mutant nothing caught (33: no selected test calls it)."""
TIMEOUT = 600.0
"""Seconds one survivor's wider tests may take; more is counted as caught (a hang)."""


def wider_paths(module: str, table: dict[str, list[str]]) -> list[str]:
    """The wider test paths of ``module`` (every pattern of the table it matches), once."""
    found = [p for pattern, paths in table.items() if fnmatch(module, pattern) for p in paths]
    return list(dict.fromkeys(found))


def survivors(modules: list[str]) -> list[tuple[str, str]]:
    """(module, mutant name) of every mutant mutmut left alive."""
    found = []
    for module in modules:
        meta = Path("mutants") / f"{module}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        found += [(module, name) for name, code in sorted(codes.items()) if code in SURVIVED]
    return found


def run_one(name: str, paths: list[str]) -> int:
    """pytest over ``paths`` with mutant ``name`` switched on, in ``mutants/``: its exit
    code (-9: killed at the timeout, its process group with it)."""
    env = {**os.environ, "MUTANT_UNDER_TEST": name, "HYPOTHESIS_PROFILE": "mutation"}
    args = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
    args += ["-p", "no:randomly", "-m", "not slow", *paths]
    with subprocess.Popen(
        args,
        cwd="mutants",
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    ) as process:
        try:
            return process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return -9


def main() -> int:
    config = tomllib.loads(Path("pyproject.toml").read_text())["tool"]
    modules: list[str] = config["mutmut"]["only_mutate"]
    table: dict[str, list[str]] = config["promoter"]["mutation"]["wider"]
    done: dict[str, int] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    todo = [
        (name, paths)
        for module, name in survivors(modules)
        if name not in done and (paths := wider_paths(module, table))
    ]
    print(f"{len(todo)} survivors to run against their module's wider tests", flush=True)
    started = time.monotonic()

    def one(item: tuple[str, list[str]]) -> tuple[str, int]:
        return item[0], run_one(*item)

    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for count, (name, code) in enumerate(pool.map(one, todo), 1):
            done[name] = code
            RESULTS.write_text(json.dumps(done, indent=1, sort_keys=True))
            verdict = "survived" if code in (0, 5) else "killed"
            elapsed = time.monotonic() - started
            print(f"[{count}/{len(todo)} {elapsed:5.0f}s] {verdict:8} {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
