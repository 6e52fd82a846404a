"""A scratch repository for the conformance kit: branches with commits pushed through git.

The kit needs a repository the plugin's SCM serves and a way to put commits on its
branches; ``Scratch`` pushes to ``git_url`` (a path or a URL git can push to) from a
throw-away clone, and reads branch tips back with ``git ls-remote``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from promoter.config import Repository

_IDENTITY = {
    "GIT_AUTHOR_NAME": "promoter conformance",
    "GIT_AUTHOR_EMAIL": "conformance@promoter.invalid",
    "GIT_COMMITTER_NAME": "promoter conformance",
    "GIT_COMMITTER_EMAIL": "conformance@promoter.invalid",
    "GIT_TERMINAL_PROMPT": "0",
}


def init_bare(path: Path) -> Path:
    """A new bare repository (for a local SCM's scratch repository)."""
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True, capture_output=True)
    return path


@dataclass
class Scratch:
    """Where the kit works: the repository as the plugin sees it, and how git reaches it."""

    repository: Repository
    git_url: str
    git_env: Mapping[str, str] = field(default_factory=dict)
    prefix: str = field(default_factory=lambda: f"conformance/{uuid.uuid4().hex[:8]}")

    def _git(self, cwd: Path | None, *args: str) -> str:
        env = {**os.environ, **_IDENTITY, **self.git_env}
        done = subprocess.run(
            ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"git {args[0]} failed: {done.stderr.strip()[:500]}")
        return done.stdout.strip()

    def branch(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def commit(self, branch: str, content: str, *, parent: str | None = None) -> str:
        """Push a commit changing one file onto ``branch`` (on top of ``parent``'s tip)."""
        with tempfile.TemporaryDirectory(prefix="promoter-conformance-") as tmp:
            work = Path(tmp)
            self._git(None, "init", "-q", str(work))
            start = parent or branch
            tip = self.tip(start)
            if tip is not None:
                self._git(work, "fetch", "-q", self.git_url, f"refs/heads/{start}")
                self._git(work, "checkout", "-q", "FETCH_HEAD")
            (work / "conformance.txt").write_text(content + "\n")
            self._git(work, "add", "conformance.txt")
            self._git(work, "commit", "-q", "-m", f"conformance: {content}")
            self._git(work, "push", "-q", self.git_url, f"HEAD:refs/heads/{branch}")
            return self._git(work, "rev-parse", "HEAD")

    def tip(self, branch: str) -> str | None:
        out = self._git(None, "ls-remote", self.git_url, f"refs/heads/{branch}")
        for line in out.splitlines():
            sha, ref = line.split("\t", 1)
            if ref == f"refs/heads/{branch}":
                return sha
        return None
