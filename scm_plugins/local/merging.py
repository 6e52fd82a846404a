"""How the local SCM merges a pull request: like GitHub and GitLab, a real three-way merge.

``git merge-tree --write-tree`` computes the merge with no working tree; a conflict
refuses the merge with ``ScmConflict`` ("not mergeable"), as the real SCMs answer.
Three methods, as the real SCMs offer them:

* ``merge``: a two-parent commit (base tip, head tip) with the merged tree;
* ``squash``: one commit on the base tip with the merged tree;
* ``rebase``: the head's commits replayed one by one on the base tip, refused when a
  commit conflicts or when the result differs from the three-way merge ("unsafe", as
  GitHub documents it). Commits whose change the base already has are skipped (like
  ``git rebase``'s patch-id check), and a merge of the base into the head (the
  promoter's "ours" merge) is replayed as one commit: the change it makes to the base.

Nothing here moves a ref: the caller compare-and-swaps the base branch to the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from promoter.errors import ScmConflict
from promoter.git.process.runner import run_git

MergeMethod = Literal["merge", "squash", "rebase"]
PATCH_HISTORY = 200
"""Commits of the base whose changes a rebase compares the head's commits with."""


class LocalGit:
    """git in the local SCM's repository at ``path``, with the plugin's environment."""

    def __init__(self, path: Path, env: Mapping[str, str]) -> None:
        self.path = path
        self.env = env

    def __call__(self, *args: str, ok: tuple[int, ...] = (0,), stdin: str | None = None) -> str:
        return self.run(*args, ok=ok, stdin=stdin)[1]

    def run(
        self, *args: str, ok: tuple[int, ...] = (0,), stdin: str | None = None
    ) -> tuple[int, str]:
        status, out, _ = run_git(args, cwd=self.path, base_env=self.env, ok=ok, stdin=stdin)
        return status, out


def merged_tree(
    git: LocalGit, base: str, head: str, *, merge_base: str | None = None
) -> str | None:
    """The tree of a three-way merge of ``head`` into ``base``; None when it conflicts.

    With ``merge_base`` (a cherry-pick), the merge is of two stand-in commits whose only
    parent has ``merge_base``'s tree: git 2.39's ``merge-tree`` has no ``--merge-base``.
    """
    if merge_base is not None:
        root = git("commit-tree", f"{merge_base}^{{tree}}", "-m", "merge base").strip()
        base, head = (
            git("commit-tree", f"{rev}^{{tree}}", "-p", root, "-m", "side").strip()
            for rev in (base, head)
        )
    args = ("merge-tree", "--write-tree", "--no-messages", base, head)
    status, out = git.run(*args, ok=(0, 1))
    return out.split("\n", 1)[0].strip() if status == 0 else None


def merge(
    git: LocalGit, *, method: MergeMethod, base: str, head: str, message: str, number: int
) -> str:
    """The new tip of the base branch once PR ``number`` (``head`` into ``base``) is merged."""
    tree = merged_tree(git, base, head)
    if tree is None:
        raise ScmConflict(f"pull request {number} is not mergeable: the merge conflicts")
    if method == "merge":
        return git("commit-tree", tree, "-p", base, "-p", head, "-m", message).strip()
    if method == "squash":
        return git("commit-tree", tree, "-p", base, "-m", message).strip()
    tip = _rebase(git, base=base, head=head, number=number)
    if git("rev-parse", f"{tip}^{{tree}}").strip() != tree:
        raise ScmConflict(
            f"pull request {number} is not mergeable: rebasing it would give another"
            " result than merging it"
        )
    return tip


def _rebase(git: LocalGit, *, base: str, head: str, number: int) -> str:
    """``head``'s own commits replayed on ``base``; the last one (``base`` if none)."""
    known = set(_patch_ids(git, "log", "-p", "--no-merges", f"-n{PATCH_HISTORY}", base).values())
    mine = _patch_ids(git, "log", "-p", "--no-merges", f"{base}..{head}")
    tip = base
    for commit, merge_base in _to_replay(git, base, head):
        if merge_base != base and mine.get(commit) in known:
            continue  # the base has this change already (an earlier rebase or squash of it)
        tree = merged_tree(git, tip, commit, merge_base=merge_base)
        if tree is None:
            raise ScmConflict(
                f"pull request {number} is not mergeable: commit {commit[:7]} conflicts"
            )
        if tree == git("rev-parse", f"{tip}^{{tree}}").strip():
            continue  # nothing left of it once replayed
        tip = _replay(git, commit, tree, tip)
    return tip


def _to_replay(git: LocalGit, base: str, head: str) -> list[tuple[str, str | None]]:
    """The commits to replay, oldest first, each with the tree its change is relative to.

    Along the head's first parents, back to a commit the base has, or to a merge that
    brought the base (or an ancestor of it) in: that merge is replayed as the change
    from its base-side parent, so what was settled there is not replayed again.
    """
    chain = git("rev-list", "--first-parent", "--parents", f"{base}..{head}").splitlines()
    picked: list[tuple[str, str | None]] = []
    for line in chain:
        commit, *parents = line.split()
        merged = [p for p in parents[1:] if _is_ancestor(git, p, base)]
        if merged:
            picked.append((commit, merged[0]))
            break
        if len(parents) <= 1:
            picked.append((commit, parents[0] if parents else None))
    return picked[::-1]


def _is_ancestor(git: LocalGit, ancestor: str, descendant: str) -> bool:
    status, _ = git.run("merge-base", "--is-ancestor", ancestor, descendant, ok=(0, 1))
    return status == 0


def _replay(git: LocalGit, commit: str, tree: str, parent: str) -> str:
    """A copy of ``commit`` with ``tree`` on ``parent``: its author and message kept."""
    fields = git("log", "-1", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", commit)
    name, email, date, message = fields.split("\0", 3)
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date}
    _, out, _ = run_git(
        ["commit-tree", tree, "-p", parent, "-F", "-"],
        cwd=git.path,
        base_env=git.env,
        env=env,
        stdin=message,
    )
    return out.strip()


def _patch_ids(git: LocalGit, *log_args: str) -> dict[str, str]:
    """``commit -> patch id`` of the commits ``git log -p log_args`` lists."""
    patches = git(*log_args)
    if not patches.strip():
        return {}
    ids = git("patch-id", "--stable", stdin=patches)
    pairs = (line.split() for line in ids.splitlines())
    return {commit: patch for patch, commit in (p for p in pairs if len(p) == 2)}
