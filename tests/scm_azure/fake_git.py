"""What the fake Azure DevOps does in git: read branches, complete pull requests, serve git.

Completions are real commits in the bare repository, as Azure's merge strategies leave
them: ``noFastForward`` a merge commit (parents target and source), ``squash`` one commit
(parent the target), ``rebase`` the source's commits replayed onto the target (a
fast-forward when the target is already among them), ``rebaseMerge`` replayed and then
merged. The tree is ``git merge-tree``'s; a conflict refuses. The target moves with
``update-ref`` guarded by its old value. Git itself is served by ``git http-backend``.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

AZURE_IDENTITY = {
    "GIT_AUTHOR_NAME": "Promoter Bot",
    "GIT_AUTHOR_EMAIL": "promoter@fabrikam.example",
    "GIT_COMMITTER_NAME": "Promoter Bot",
    "GIT_COMMITTER_EMAIL": "promoter@fabrikam.example",
}


class Conflict(Exception):
    """The source does not merge cleanly into the target."""


class Moved(Exception):
    """The target moved between reading it and updating it."""


def git(path: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(
        ["git", "--git-dir", str(path), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **AZURE_IDENTITY},
        check=False,
    )
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def tip(path: Path, branch: str) -> str | None:
    out = git(path, "rev-parse", "--verify", "-q", f"refs/heads/{branch}^{{commit}}", check=False)
    return out or None


def refs(path: Path) -> dict[str, str]:
    """Every ref of the repository and the object it points at."""
    out = git(path, "for-each-ref", "--format=%(refname) %(objectname)")
    found = (line.split(" ", 1) for line in out.splitlines() if " " in line)
    return {name: sha for name, sha in found}


def merged_tree(path: Path, target: str, source: str) -> str | None:
    """The tree of merging ``source`` into ``target``; None when they conflict."""
    done = subprocess.run(
        ["git", "--git-dir", str(path), "merge-tree", "--write-tree", target, source],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 1:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"git merge-tree failed: {done.stderr.strip()}")
    return done.stdout.split("\n", 1)[0].strip()


def is_ancestor(path: Path, older: str, newer: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(path), "merge-base", "--is-ancestor", older, newer],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


def _commit(path: Path, tree: str, parents: list[str], message: str) -> str:
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return git(path, *args, "-m", message)


def _replayed(path: Path, target: str, source: str) -> str:
    """The source's commits (not in the target) cherry-picked onto the target, oldest first,
    in a throw-away worktree of the bare repository."""
    with tempfile.TemporaryDirectory(prefix="fake-azure-rebase-") as tmp:
        work = Path(tmp) / "work"
        git(path, "worktree", "add", "--detach", "-q", str(work), target)
        try:
            for commit in git(
                path, "rev-list", "--reverse", "--no-merges", f"{target}..{source}"
            ).split():
                done = subprocess.run(
                    ["git", "-C", str(work), "cherry-pick", "--allow-empty", commit],
                    capture_output=True,
                    env={**os.environ, **AZURE_IDENTITY},
                    check=False,
                )
                if done.returncode != 0:
                    raise Conflict(commit)
            head = subprocess.run(
                ["git", "-C", str(work), "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                check=True,
            )
            return head.stdout.strip()
        finally:
            git(path, "worktree", "remove", "--force", str(work), check=False)
            git(path, "worktree", "prune", check=False)


def complete(
    path: Path, *, strategy: str, branch: str, target: str, source: str, message: str
) -> str:
    """Merge ``source`` into ``branch`` (at ``target``) as ``strategy`` does; the new tip."""
    tree = merged_tree(path, target, source)
    if tree is None:
        raise Conflict(source)
    if strategy == "noFastForward":
        new = _commit(path, tree, [target, source], message)
    elif strategy == "squash":
        new = _commit(path, tree, [target], message)
    elif strategy == "rebase":
        new = source if is_ancestor(path, target, source) else _replayed(path, target, source)
    elif strategy == "rebaseMerge":
        replayed = _replayed(path, target, source)
        new = _commit(
            path, git(path, "rev-parse", f"{replayed}^{{tree}}"), [target, replayed], message
        )
    else:
        raise ValueError(strategy)
    done = subprocess.run(
        ["git", "--git-dir", str(path), "update-ref", f"refs/heads/{branch}", new, target],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise Moved(branch)
    return new


def http_backend(
    root: Path, *, method: str, path_info: str, query: str, headers: dict[str, str], body: bytes
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One smart-HTTP request answered by ``git http-backend`` for the repositories in ``root``."""
    env = {
        **os.environ,
        "GIT_PROJECT_ROOT": str(root),
        "GIT_HTTP_EXPORT_ALL": "1",
        "PATH_INFO": path_info,
        "QUERY_STRING": query,
        "REQUEST_METHOD": method,
        "CONTENT_TYPE": headers.get("content-type", ""),
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_CONTENT_ENCODING": headers.get("content-encoding", ""),
        "GIT_PROTOCOL": headers.get("git-protocol", ""),
        "REMOTE_USER": "promoter",
        "REMOTE_ADDR": "127.0.0.1",
    }
    done = subprocess.run(
        ["git", "http-backend"], input=body, capture_output=True, env=env, check=False
    )
    head, _, payload = done.stdout.partition(b"\r\n\r\n")
    status, out = 200, []
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(": ")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            out.append((name, value))
    return status, out, payload
