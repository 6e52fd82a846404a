"""Helpers shared by integration tests: a sandbox GitOps repository and polling waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from promoter.cli.sandbox import ENVIRONMENTS, GitOpsRepo, sandbox_config
from promoter.config import Config
from promoter.config.loader import parse_config

T = TypeVar("T")
__all__ = ["ENVIRONMENTS", "GitOpsRepo", "local_config", "wait_for"]


def wait_for(check: Callable[[], T | None], *, timeout: float = 20.0, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.02)


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
