"""The local SCM merges like GitHub and GitLab: three-way, refused on conflict, three methods."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from promoter.cli.sandbox import commit_files, git, init_bare
from promoter.config import LocalProvider, Repository, ScmProvider
from promoter.errors import ScmBusy, ScmConflict
from promoter.git.process.stale_lock import STALE_AFTER
from promoter.models import PullRequestState
from scm_plugins.local import LocalScm


def make_scm(tmp_path: Path, method: str = "merge") -> LocalScm:
    provider = ScmProvider(name="local", local=LocalProvider(merge_method=method))  # type: ignore[arg-type]
    return LocalScm(provider=provider, state_dir=str(tmp_path / f"s-{method}"))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = init_bare(tmp_path / "r.git")
    commit_files(path, "env", {"a.yaml": "1\n", "b.yaml": "1\n"}, "base")
    git(path, "branch", "env-next", "env")
    return path


def repository(path: Path) -> Repository:
    return Repository(name="r", url=str(path), scm_provider="local")


def merge(scm: LocalScm, path: Path) -> str:
    repo = repository(path)
    pr = scm.open_pull_request(
        repo=repo, head="env-next", base="env", title="t", body="", labels=()
    )
    head = git(path, "rev-parse", "env-next")
    return scm.merge_pull_request(repo=repo, number=pr.number, expected_head_sha=head, message="m")


def tree(path: Path, rev: str) -> str:
    return git(path, "rev-parse", f"{rev}^{{tree}}")


def test_a_change_on_both_sides_of_the_same_line_is_not_mergeable(
    tmp_path: Path, path: Path
) -> None:
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "proposed")
    commit_files(path, "env", {"a.yaml": "hotfix\n"}, "a person's hotfix")
    before = git(path, "rev-parse", "env")
    scm = make_scm(tmp_path)
    with pytest.raises(ScmConflict, match="not mergeable"):
        merge(scm, path)
    assert git(path, "rev-parse", "env") == before
    assert scm.pull_requests(repo=repository(path))[0].state is PullRequestState.OPEN


def test_a_merge_keeps_a_change_of_the_base_that_the_head_never_saw(
    tmp_path: Path, path: Path
) -> None:
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "proposed")
    hotfix = commit_files(path, "env", {"b.yaml": "hotfix\n"}, "a person's hotfix")
    head = git(path, "rev-parse", "env-next")
    merged = merge(make_scm(tmp_path), path)
    assert git(path, "rev-list", "--parents", "-n1", merged).split()[1:] == [hotfix, head]
    assert git(path, "show", f"{merged}:a.yaml") == "2"
    assert git(path, "show", f"{merged}:b.yaml") == "hotfix"


def test_a_squash_merge_is_one_commit_on_the_base_with_the_merged_tree(
    tmp_path: Path, path: Path
) -> None:
    base = git(path, "rev-parse", "env")
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "one")
    head = commit_files(path, "env-next", {"b.yaml": "2\n"}, "two")
    merged = merge(make_scm(tmp_path, "squash"), path)
    assert git(path, "rev-list", "--parents", "-n1", merged).split()[1:] == [base]
    assert tree(path, merged) == tree(path, head)


def test_a_rebase_merge_replays_each_commit_of_the_head_on_the_base(
    tmp_path: Path, path: Path
) -> None:
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "one")
    head = commit_files(path, "env-next", {"b.yaml": "2\n"}, "two")
    hotfix = commit_files(path, "env", {"c.yaml": "new\n"}, "a person's file")
    merged = merge(make_scm(tmp_path, "rebase"), path)
    subjects = git(path, "log", "--format=%s", f"{hotfix}..{merged}").split("\n")
    assert subjects == ["two", "one"]
    assert git(path, "rev-list", "--merges", f"{hotfix}..{merged}") == ""
    assert git(path, "show", f"{merged}:b.yaml") == "2"
    assert git(path, "show", f"{merged}:c.yaml") == "new"
    assert merged != head


def ours_merge(path: Path) -> None:
    """What the promoter does to a conflicting head: merge the base in, the head's tree wins."""
    head, base = git(path, "rev-parse", "env-next"), git(path, "rev-parse", "env")
    commit = git(path, "commit-tree", tree(path, head), "-p", head, "-p", base, "-m", "ours")
    git(path, "update-ref", "refs/heads/env-next", commit, head)


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
def test_a_second_promotion_conflicts_until_the_base_is_merged_into_the_head(
    tmp_path: Path, path: Path, method: str
) -> None:
    scm = make_scm(tmp_path, method)
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "one")
    merge(scm, path)
    commit_files(path, "env", {"a.yaml": "reverted\n"}, "revert")
    head = commit_files(path, "env-next", {"a.yaml": "3\n"}, "two")
    with pytest.raises(ScmConflict, match="not mergeable"):
        merge(scm, path)
    ours_merge(path)
    merged = merge(scm, path)
    assert tree(path, merged) == tree(path, head)


def test_a_rebase_skips_the_changes_an_earlier_rebase_already_brought(
    tmp_path: Path, path: Path
) -> None:
    scm = make_scm(tmp_path, "rebase")
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "one")
    first = merge(scm, path)
    commit_files(path, "env-next", {"b.yaml": "2\n"}, "two")
    merged = merge(scm, path)
    assert git(path, "log", "--format=%s", f"{first}..{merged}") == "two"
    assert git(path, "show", f"{merged}:a.yaml") == "2"
    assert git(path, "show", f"{merged}:b.yaml") == "2"


def test_a_conflicting_rebase_is_not_mergeable(tmp_path: Path, path: Path) -> None:
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "proposed")
    commit_files(path, "env", {"a.yaml": "hotfix\n"}, "a person's hotfix")
    with pytest.raises(ScmConflict, match="not mergeable"):
        merge(make_scm(tmp_path, "rebase"), path)


def test_a_base_locked_by_a_killed_git_says_when_the_merge_can_be_tried_again(
    tmp_path: Path, path: Path
) -> None:
    """git leaves the lock of a killed ``update-ref``; a fresh one may be a live git's,
    so the merge waits until it is taken as abandoned, then goes through."""
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "proposed")
    before = git(path, "rev-parse", "env")
    lock = path / "refs/heads/env.lock"
    lock.write_text("")
    scm = make_scm(tmp_path)
    with pytest.raises(ScmBusy, match="env: it is locked") as refused:
        merge(scm, path)
    assert refused.value.delay is not None
    assert STALE_AFTER - 1 < refused.value.delay <= STALE_AFTER + 1
    assert git(path, "rev-parse", "env") == before
    then = time.time() - STALE_AFTER - 1  # the moment it is due
    os.utime(lock, (then, then))
    repo = repository(path)
    (pr,) = scm.pull_requests(repo=repo)
    head = git(path, "rev-parse", "env-next")
    scm.merge_pull_request(repo=repo, number=pr.number, expected_head_sha=head, message="m")
    assert not lock.exists()
    assert tree(path, "env") == tree(path, "env-next")
