"""What the fake GitHub does in git: read branches and merge, in a real bare repository.

A merge is a real commit: ``commit-tree`` with the PR head's tree, parents base and
head (one parent, base, for squash and rebase), then ``update-ref`` guarded by the
base's old value, as GitHub's merge button would leave it for a promotion branch.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GITHUB_IDENTITY = {
    "GIT_AUTHOR_NAME": "GitHub",
    "GIT_AUTHOR_EMAIL": "noreply@github.com",
    "GIT_COMMITTER_NAME": "GitHub",
    "GIT_COMMITTER_EMAIL": "noreply@github.com",
}


class BaseMoved(Exception):
    """The base branch moved between reading it and updating it."""


def git(git_dir: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **GITHUB_IDENTITY},
        check=False,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def branch_sha(git_dir: Path, branch: str) -> str | None:
    out = git(
        git_dir, "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", check=False
    )
    return out or None


def commit_exists(git_dir: Path, sha: str) -> bool:
    return bool(git(git_dir, "rev-parse", "--verify", "-q", f"{sha}^{{commit}}", check=False))


def is_ancestor(git_dir: Path, older: str, newer: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def merge(git_dir: Path, *, base: str, head_sha: str, method: str, message: str) -> str:
    """Merge ``head_sha`` into branch ``base``; the new base SHA."""
    base_sha = branch_sha(git_dir, base)
    if base_sha is None:
        raise BaseMoved(base)
    tree = git(git_dir, "rev-parse", f"{head_sha}^{{tree}}")
    parents = ["-p", base_sha] + (["-p", head_sha] if method == "merge" else [])
    new = git(git_dir, "commit-tree", tree, *parents, "-m", message)
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "update-ref", f"refs/heads/{base}", new, base_sha],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise BaseMoved(base)
    return new
