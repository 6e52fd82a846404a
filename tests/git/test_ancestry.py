"""Ancestry near the tip is answered by walking parents, and always as git answers it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from promoter.git import GitMirror
from promoter.git.ancestry import walk_ancestry
from tests.gitrepo import GitSandbox, git


def history(tmp_path: Path) -> tuple[GitSandbox, list[str]]:
    """Two branches from a root, a merge of both, and a commit with no parent."""
    remote = GitSandbox(tmp_path)
    shas = [remote.commit_dry({"a": "1\n"}), remote.commit_dry({"a": "2\n"})]
    remote.git("update-ref", "refs/heads/side", shas[0])
    shas += [remote.commit("side", {"b": "1\n"}), remote.commit("side", {"b": "2\n"})]
    tree = remote.git("rev-parse", "side^{tree}")
    merge = remote.git("commit-tree", tree, "-p", shas[1], "-p", shas[3], "-m", "merge")
    remote.git("update-ref", "refs/heads/main", merge)
    shas.append(merge)
    shas.append(remote.commit("orphan", {"c": "1\n"}))
    return remote, shas


def git_says(repo: Path, ancestor: str, descendant: str) -> bool:
    done = subprocess.run(
        ["git", "--git-dir", str(repo), "merge-base", "--is-ancestor", ancestor, descendant],
        check=False,
    )
    return done.returncode == 0


def test_the_walk_answers_every_pair_as_git_does_or_leaves_it_to_git(tmp_path: Path) -> None:
    remote, shas = history(tmp_path)
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        mirror.refresh()

        def parents(sha: str) -> list[str] | None:
            found = mirror.commit_parents(sha)
            return None if found is None else found[1]

        for limit in (1, 2, 16):
            for ancestor in shas:
                for descendant in shas:
                    expected = git_says(remote.path, ancestor, descendant)
                    walked = walk_ancestry(parents, ancestor, descendant, limit)
                    assert walked in (expected, None), (ancestor, descendant, limit)
                    assert mirror.is_ancestor(ancestor, descendant) is expected
        # Near the tip the walk knows: the parent, and a root that has no parent.
        assert walk_ancestry(parents, shas[0], shas[1]) is True
        assert walk_ancestry(parents, shas[1], shas[5]) is False
        assert walk_ancestry(parents, shas[0], shas[4], limit=1) is None


def test_an_object_that_is_not_a_commit_is_left_to_git(tmp_path: Path) -> None:
    remote, shas = history(tmp_path)
    text = f"tree x\nparent {shas[0]}\n"  # a blob that reads like a commit
    remote.commit("files", {"f": text})
    blob = git(remote.path, "hash-object", "-w", "--stdin", stdin=text)
    with GitMirror(name="gitops", url=remote.url, root=tmp_path / "state") as mirror:
        mirror.refresh()
        assert mirror.commit_parents(blob) is None
        assert mirror.is_ancestor(shas[0], blob) is False
