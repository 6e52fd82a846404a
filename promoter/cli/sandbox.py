"""Writes commits into a local repository without a working tree (for the demo and tests)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from promoter.git.identity import identity_env
from promoter.git.runner import run_git


@cache
def _identity() -> dict[str, str]:
    return identity_env()


def git(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> str:
    """``git args`` in ``repo`` with a fallback identity; its stripped output."""
    return run_git(args, cwd=repo, env={**_identity(), **(env or {})}, stdin=stdin)[1].strip()


def init_bare(path: Path, *, initial_branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--bare", "--quiet", f"--initial-branch={initial_branch}")
    return path


def commit_files(repo: Path, branch: str, files: Mapping[str, str | None], message: str) -> str:
    """Commit ``files`` (path -> content, None deletes) on top of ``branch``; returns the SHA."""
    parent = (
        git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
        if _has_branch(repo, branch)
        else ""
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if parent:
            git(repo, "read-tree", parent, env=env)
        for name, content in files.items():
            if content is None:
                removal = f"0 {'0' * 40}\t{name}\n"
                git(repo, "update-index", "--index-info", env=env, stdin=removal)
                continue
            blob_file = Path(tmp) / "blob"
            blob_file.write_text(content, encoding="utf-8")
            blob = git(repo, "hash-object", "-w", str(blob_file))
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}", env=env)
        tree = git(repo, "write-tree", env=env)
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    sha = git(repo, *args)
    git(repo, "update-ref", f"refs/heads/{branch}", sha, parent or "0" * 40)
    return sha


def _has_branch(repo: Path, branch: str) -> bool:
    ref = f"refs/heads/{branch}"
    return run_git(["rev-parse", "--verify", "--quiet", ref], cwd=repo, ok=(0, 1))[0] == 0
