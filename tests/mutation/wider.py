"""The survivors of ``mutmut run`` against the wider tests that call their functions.

``mutmut run`` gives each mutant the tests at the level where the guards live (the
directories of ``pytest_add_cli_args_test_selection``): seconds a mutant. The end-to-end,
reliability and SCM suites that call these modules too take minutes a mutant, so they run
for the survivors only: in a copy of the project (``.mutmut-wider/``) whose selection is
``[tool.promoter.mutation] wider`` as well, mutmut maps those suites' tests to the
functions they call and runs each survivor against the ones that call its function.
What they kill is written to ``mutants/wider.json`` and counted as killed by
``python -m tests.mutation``; what they do not is a survivor still.

Run from the repository's root after ``mutmut run`` (``make mutate`` does it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.mutation.__main__ import DOC, SURVIVED, explained, modules_of, mutant_of

RESULTS = Path("mutants/wider.json")
COPY = Path(".mutmut-wider")
COPIED = (
    *("promoter", "scm_plugins", "webhooks", "tests", "docs", "examples"),
    *("pyproject.toml", "Makefile"),
)
SELECTION = re.compile(r"^pytest_add_cli_args_test_selection = \[.*?^\]", re.M | re.S)


def survivors(modules: list[str], root: Path = Path(".")) -> dict[str, int]:
    """Every mutant of ``modules`` and its exit code, as the run in ``root`` left them."""
    return {name: code for _, name, code in results(modules, root)}


def results(modules: list[str], root: Path = Path(".")) -> list[tuple[str, str, int]]:
    """Every mutant of ``modules`` with its module and exit code, as ``root``'s run left it."""
    found: list[tuple[str, str, int]] = []
    for module in modules:
        meta = root / "mutants" / f"{module}.meta"
        if meta.exists():
            codes = json.loads(meta.read_text())["exit_code_by_key"]
            found.extend((module, name, code) for name, code in codes.items())
    return found


def unexplained(modules: list[str]) -> list[str]:
    """The survivors of ``mutmut run`` that docs/testing.md does not list as equivalent:
    a listed one cannot be killed, and would cost the wider suites for nothing."""
    known = explained(DOC.read_text())
    return sorted(
        name
        for module, name, code in results(modules)
        if code in SURVIVED and mutant_of(module, name)[0].key not in known
    )


def widened(pyproject: str, paths: list[str]) -> str:
    """``pyproject.toml`` with the wider paths added to mutmut's test selection."""
    selection = tomllib.loads(pyproject)["tool"]["mutmut"]["pytest_add_cli_args_test_selection"]
    wider = list(dict.fromkeys([*selection, *paths]))
    text = "pytest_add_cli_args_test_selection = [\n" + "".join(f'    "{p}",\n' for p in wider)
    replaced, count = SELECTION.subn(lambda _: text + "]", pyproject)
    if count != 1:
        raise SystemExit("pyproject.toml: pytest_add_cli_args_test_selection not found")
    return replaced


def prepare(paths: list[str]) -> None:
    """A fresh copy of the project with the wider selection."""
    shutil.rmtree(COPY, ignore_errors=True)
    COPY.mkdir()
    for name in COPIED:
        source = Path(name)
        if source.is_dir():
            shutil.copytree(source, COPY / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, COPY / name)
    text = widened(Path("pyproject.toml").read_text(), paths)
    (COPY / "pyproject.toml").write_text(text)


def main(argv: list[str]) -> int:
    """``--minutes N``: stop the wider run after N minutes (what ran by then counts)."""
    minutes = float(argv[argv.index("--minutes") + 1]) if "--minutes" in argv else None
    config = tomllib.loads(Path("pyproject.toml").read_text())["tool"]
    modules = modules_of()
    paths: list[str] = config["promoter"]["mutation"]["wider"]
    left = unexplained(modules)
    print(
        f"{len(left)} survivors, not listed as equivalent, to run against the wider tests"
        " that call them",
        flush=True,
    )
    if not left:
        RESULTS.write_text("{}")
        return 0
    prepare(paths)
    mutmut = Path(sys.executable).with_name("mutmut")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    cpus = str(os.cpu_count() or 1)
    args: list[str | Path] = [mutmut, "run", "--max-children", cpus, *left]
    run = subprocess.Popen(args, cwd=COPY, env=env, start_new_session=True)
    try:
        status = run.wait(timeout=minutes * 60 if minutes else None)
    except subprocess.TimeoutExpired:
        print(f"stopped after {minutes} minutes: the rest is counted as survived", flush=True)
        os.killpg(run.pid, signal.SIGTERM)  # mutmut and the workers it forked
        run.wait()
        status = 0
    if status != 0:
        print(
            f"mutmut could not run the wider suites (exit {status}; a test failing unmutated"
            f" in {COPY}/mutants stops it): the survivors stay survivors",
            flush=True,
        )
    found = survivors(modules, COPY)
    wider = {name: code for name in left if (code := found.get(name)) is not None}
    if RESULTS.exists():  # an earlier, interrupted run's verdicts stand where this one has none
        wider = {**json.loads(RESULTS.read_text()), **wider}
    RESULTS.write_text(json.dumps(wider, indent=1, sort_keys=True))
    killed = sum(1 for code in wider.values() if code not in SURVIVED)
    print(f"the wider tests killed {killed} of {len(left)} survivors", flush=True)
    return 1 if status != 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
