"""Helpers shared by integration tests: a sandbox GitOps repository and polling waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from promoter.cli.hydrate import hydrate
from promoter.cli.sandbox import commit_files, git, init_bare
from promoter.config import Config
from promoter.config.loader import parse_config

T = TypeVar("T")
ENVIRONMENTS = ["environment/dev", "environment/staging", "environment/prod"]


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


@dataclass
class GitOpsRepo:
    """A bare repository with a dry ``main`` hydrated onto dev, staging and prod."""

    path: Path

    @classmethod
    def create(cls, root: Path, environments: list[str] | None = None) -> GitOpsRepo:
        repo = cls(init_bare(root / "gitops.git"))
        repo.change("1.0.0", "Add guestbook 1.0.0", environments)
        return repo

    def change(self, version: str, message: str, environments: list[str] | None = None) -> str:
        """Commit a new dry version and hydrate it; returns the dry SHA."""
        sha = commit_files(
            self.path,
            "main",
            {"apps/guestbook/values.yaml": f"image: guestbook:{version}\n"},
            message,
        )
        hydrate(repo=self.path, dry_ref="main", branches=environments or ENVIRONMENTS)
        return sha

    def tip(self, branch: str) -> str:
        return git(self.path, "rev-parse", f"refs/heads/{branch}")

    def first_parents(self, branch: str) -> list[str]:
        return git(self.path, "rev-list", "--first-parent", f"refs/heads/{branch}").split()


def local_config(
    repo: Path,
    state: Path,
    *,
    extra_strategy: str = "",
    auto_revert: str = "",
    **daemon: object,
) -> Config:
    """The demo's strategy on ``repo``; ``auto_revert`` (e.g. ``"{enabled: true}"``) is set
    on staging and prod."""
    revert = f", autoRevert: {auto_revert}" if auto_revert else ""
    settings = {"pollInterval": "0.1s", "resyncInterval": "30s", "workers": 2, **daemon}
    daemon_yaml = "\n".join(f"  {k}: {v}" for k, v in settings.items())
    text = f"""
scmProviders:
  - name: local
    local: {{}}
repositories:
  - name: gitops
    url: {repo}
    scmProvider: local
promotionStrategies:
  - name: guestbook
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev}}
      - {{branch: environment/staging{revert}}}
      - {{branch: environment/prod{revert}}}
{extra_strategy}
daemon:
  stateDir: {state}
{daemon_yaml}
"""
    return parse_config(text)
