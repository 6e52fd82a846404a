"""A command loads what it runs and nothing else: ``promoter --help`` loads no command,
``promoter status --url`` no model, no daemon and no HTTP library.

Bounded by what is imported, not by the clock: a loaded machine cannot break it, and a
change that drags the daemon into the command line's start fails here by name.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "pydantic",
    "httpx",
    "starlette",
    "uvicorn",
    "git",
    "kubernetes",
    "yaml",
    "promoter.daemon",
    "promoter.engine",
    "promoter.kube",
    "promoter.http",
    "promoter.wiring",
    "promoter.config.models",
    "scm_plugins",
    "webhooks",
)
"""What a command that only parses its arguments, or asks a daemon, never needs."""


def loaded(argv: list[str]) -> tuple[int, set[str]]:
    """Run ``promoter ARGV`` in a fresh interpreter: its exit code and the modules it loaded."""
    script = (
        "import json, sys\n"
        "from promoter.cli.main import main\n"
        "try:\n"
        f"    code = main({argv!r})\n"
        "except SystemExit as exited:\n"
        "    code = exited.code\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
        "sys.exit(code or 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("MODULES "))
    return done.returncode, set(json.loads(line.removeprefix("MODULES ")))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["status", "--help"], ["hold", "--help"], ["freeze", "--help"]],
)
def test_help_and_version_load_no_model_daemon_or_http_library(argv: list[str]) -> None:
    code, modules = loaded(argv)
    assert code == 0
    assert heavy(modules) == []


def test_status_from_a_daemon_loads_no_model_daemon_or_http_library() -> None:
    code, modules = loaded(["status", "--url", "http://127.0.0.1:9"])
    assert code == 1  # nothing listens on port 9: the error is the daemon's address
    assert heavy(modules) == []


def test_a_command_still_loads_what_it_runs() -> None:
    code, modules = loaded(["validate", "--offline", "examples/promoter.yaml"])
    assert code == 0
    assert "promoter.config.models" in modules
