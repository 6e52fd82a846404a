"""Helpers shared by integration tests: a sandbox GitOps repository and polling waits."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from promoter.cli.sandbox import ENVIRONMENTS, GitOpsRepo, sandbox_config
from promoter.config import Config
from promoter.config.loader import parse_config

T = TypeVar("T")
__all__ = [
    "ENVIRONMENTS",
    "TEAMS",
    "GitOpsRepo",
    "git_children",
    "local_config",
    "teams_strategy",
    "wait_for",
]

TEAMS = ["team-a/prod", "team-b/prod"]
"""Two environments whose branches share their last part: ``prod`` names neither."""


def teams_strategy(name: str = "teams") -> str:
    """A strategy on the sandbox's repository whose environments are ``TEAMS`` (hydrate
    them too: ``GitOpsRepo.create(root, [*ENVIRONMENTS, *TEAMS])``), as the YAML of
    ``local_config``'s ``extra_strategy``."""
    return f"  - name: {name}\n    repository: gitops\n    environments:\n" + "".join(
        f"      - {{branch: {branch}}}\n" for branch in TEAMS
    )


WAIT = 60.0
"""Seconds ``wait_for`` waits by default: what it waits for happens in milliseconds on an
idle machine, in seconds on one loaded with other work; only what never happens takes
this long (then the test fails)."""


def wait_for(
    check: Callable[[], T | None], *, timeout: float = WAIT, what: str = "", poll: float = 0.02
) -> T:
    """Poll ``check`` every ``poll`` seconds until it returns something truthy; fail with
    ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(poll)


def git_children(cwd: Path) -> dict[int, str]:
    """This process's live git children running in ``cwd``: pid -> command line (from
    ``/proc``; a child that exited and was not waited for has no command line)."""
    found: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            if parent != os.getpid():
                continue
            command = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            where = (stat.parent / "cwd").resolve()
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
        if command.startswith("git") and where == cwd.resolve():
            found[int(stat.parent.name)] = command.strip()
    return found


def local_config(
    repo: Path,
    state: Path,
    *,
    extra_strategy: str = "",
    auto_revert: str = "",
    environments: dict[str, str] | None = None,
    access: str = "",
    **daemon: object,
) -> Config:
    """The sandbox's strategy on ``repo`` (``promoter.cli.sandbox``); ``auto_revert``
    (e.g. ``"{enabled: true}"``) is set on staging and prod."""
    settings = {"pollInterval": "0.1s", "resyncInterval": "30s", "workers": 2, **daemon}
    return parse_config(
        sandbox_config(
            repo,
            state,
            auto_revert=auto_revert,
            environments=environments,
            extra_strategy=extra_strategy,
            daemon=settings,
            access=access,
        )
    )
