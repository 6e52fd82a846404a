"""A raw tree read as git wrote it (``caches.tree_entries``): every entry's name, mode
and SHA as ``git ls-tree`` lists them, and a truncated tree refused."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from promoter.git.caches import tree_entries


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True
    ).stdout


def _tree(tmp_path: Path) -> tuple[Path, str]:
    """A tree with a blob, an executable, a symlink, a subtree and a UTF-8 name."""
    repo = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    blob = _git(repo, "hash-object", "-w", "--stdin", stdin=b"x\n").decode().strip()
    inner = _git(repo, "mktree", stdin=f"100644 blob {blob}\tleaf\n".encode()).decode().strip()
    listing = (
        f"100644 blob {blob}\tapp.yaml\n"
        f"100755 blob {blob}\trun.sh\n"
        f"120000 blob {blob}\tlink\n"
        f"040000 tree {inner}\tab\n"
        f"100644 blob {blob}\tdéjà vu.txt\n"
    )
    return repo, _git(repo, "mktree", stdin=listing.encode()).decode().strip()


def test_every_entry_is_read_with_the_mode_and_sha_git_lists(tmp_path: Path) -> None:
    repo, tree = _tree(tmp_path)
    raw = _git(repo, "cat-file", "tree", tree)
    listed = {}
    for line in _git(repo, "ls-tree", "-z", tree).split(b"\0"):
        if line:
            meta, name = line.split(b"\t", 1)
            mode, _, sha = meta.split()
            listed[name.decode()] = (int(mode, 8), sha.decode())
    assert tree_entries(raw) == listed
    assert tree_entries(b"") == {}


@pytest.mark.parametrize("cut", [1, 10, 21])
def test_a_truncated_tree_is_refused(tmp_path: Path, cut: int) -> None:
    repo, tree = _tree(tmp_path)
    raw = _git(repo, "cat-file", "tree", tree)
    with pytest.raises(ValueError):
        tree_entries(raw[:-cut])


def test_a_mode_that_is_not_octal_is_refused() -> None:
    with pytest.raises(ValueError):
        tree_entries(b"10x644 name\0" + b"\1" * 20)
