"""A bare "remote" repository for tests, built with plumbing: a dry ``main`` and its commits.

``GitSandbox(tmp_path)`` makes ``tmp_path/remote.git``; ``commit_dry`` adds commits to
``main`` without a working tree, with a fixed identity so tests never depend on the
machine's git configuration.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Dev Eloper",
    "GIT_AUTHOR_EMAIL": "dev@example.invalid",
    "GIT_COMMITTER_NAME": "Dev Eloper",
    "GIT_COMMITTER_EMAIL": "dev@example.invalid",
}


def git(repo: Path, *args: str, stdin: str | None = None, env: Mapping[str, str] = IDENTITY) -> str:
    """Run git in ``repo`` and return its stdout without the trailing newline."""
    result = subprocess.run(
        ["git", "--git-dir", str(repo), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )
    if result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.removesuffix("\n")


class GitSandbox:
    """A bare repository under ``root`` with a dry branch; the "remote" of a test."""

    def __init__(self, root: Path, *, name: str = "remote", dry_branch: str = "main") -> None:
        self.path = root / f"{name}.git"
        self.dry_branch = dry_branch
        subprocess.run(
            ["git", "init", "--quiet", "--bare", "--initial-branch", dry_branch, str(self.path)],
            check=True,
        )

    @property
    def url(self) -> str:
        return str(self.path)

    def git(self, *args: str, stdin: str | None = None) -> str:
        return git(self.path, *args, stdin=stdin)

    def commit(self, branch: str, files: Mapping[str, str | None], message: str = "change") -> str:
        """Commit ``files`` (path -> content; None deletes) on top of ``branch``; its SHA."""
        parent = self.branch_sha(branch)
        with tempfile.TemporaryDirectory() as tmp:
            env = {**IDENTITY, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if parent:
                git(self.path, "read-tree", parent, env=env)
            for path, content in files.items():
                if content is None:
                    git(self.path, "update-index", "--force-remove", "--", path, env=env)
                    continue
                blob = git(self.path, "hash-object", "-w", "--stdin", stdin=content)
                git(
                    self.path,
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    f"100644,{blob},{path}",
                    env=env,
                )
            tree = git(self.path, "write-tree", env=env)
        parents = ["-p", parent] if parent else []
        sha = git(self.path, "commit-tree", tree, *parents, "-m", message)
        git(self.path, "update-ref", f"refs/heads/{branch}", sha, parent or "0" * 40)
        return sha

    def commit_dry(self, files: Mapping[str, str | None], message: str = "change") -> str:
        """Commit ``files`` on the dry branch; its SHA."""
        return self.commit(self.dry_branch, files, message)

    def branch_sha(self, name: str) -> str | None:
        """The tip of branch ``name``, or None."""
        out = git(self.path, "for-each-ref", "--format=%(objectname)", f"refs/heads/{name}")
        return out or None

    def delete_branch(self, name: str) -> None:
        git(self.path, "update-ref", "-d", f"refs/heads/{name}")

    def set_branch(self, name: str, sha: str) -> None:
        git(self.path, "update-ref", f"refs/heads/{name}", sha)

    def note(self, sha: str, text: str, *, ref: str = "refs/notes/hydrator.metadata") -> None:
        """Add (or replace) the note on ``sha`` under ``ref``."""
        git(self.path, "notes", f"--ref={ref}", "add", "-f", "-m", text, sha)

    def read_note(self, sha: str, *, ref: str = "refs/notes/hydrator.metadata") -> str | None:
        result = subprocess.run(
            ["git", "--git-dir", str(self.path), "notes", f"--ref={ref}", "show", sha],
            capture_output=True,
            text=True,
            check=False,
        )
        return result.stdout if result.returncode == 0 else None

    def show(self, rev: str) -> str:
        """The content of ``rev`` (``sha:path``, a blob...)."""
        return git(self.path, "cat-file", "-p", rev)

    def tree_names(self, rev: str) -> list[str]:
        return git(self.path, "ls-tree", "--name-only", rev).splitlines()
