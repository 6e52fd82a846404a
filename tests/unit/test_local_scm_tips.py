"""The local SCM reads branch tips and commits through one persistent ``git cat-file`` per
repository: never a stale tip (a ref moved, packed, deleted, the repository made again), a
process that died is started again, ancestry answered as ``git merge-base`` answers it,
and a pull request call starts no git process of its own."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from promoter.cli.sandbox import commit_files, git, init_bare
from promoter.config import LocalProvider, Repository, ScmProvider
from promoter.errors import ScmNotFound
from promoter.models import PullRequest, PullRequestState
from scm_plugins.local import LocalScm
from scm_plugins.local.refs import BranchTips
from tests.unit.test_local_scm import promotion_repository


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return promotion_repository(tmp_path / "r.git")


@pytest.fixture
def tips(path: Path) -> Iterator[BranchTips]:
    reader = BranchTips(path, {})
    yield reader
    reader.close()


def local_scm(path: Path, tmp_path: Path) -> tuple[Repository, LocalScm]:
    """The repository at ``path`` as the local SCM's, and the plugin (closed by the test)."""
    repo = Repository(name="r", url=str(path), scm_provider="local")
    provider = ScmProvider(name="local", local=LocalProvider())
    return repo, LocalScm(provider=provider, state_dir=str(tmp_path / "s"))


@contextmanager
def pr_open(path: Path, tmp_path: Path) -> Iterator[tuple[Repository, LocalScm, PullRequest]]:
    """The local SCM over ``path`` with a PR open from env-next into env; closed after."""
    repo, scm = local_scm(path, tmp_path)
    try:
        yield repo, scm, open_pr(scm, repo)
    finally:
        scm.close()


def open_pr(scm: LocalScm, repo: Repository) -> PullRequest:
    return scm.open_pull_request(
        repo=repo, head="env-next", base="env", title="t", body="", labels=()
    )


def tip(path: Path, branch: str) -> str:
    return git(path, "rev-parse", f"refs/heads/{branch}").strip()


def test_a_branch_moved_packed_or_deleted_after_the_first_read_is_read_as_it_is_now(
    path: Path, tips: BranchTips
) -> None:
    before = tips.tips(("env", "env-next"))
    assert before == {"env": tip(path, "env"), "env-next": tip(path, "env-next")}
    git(path, "update-ref", "refs/heads/env", tip(path, "env-next"))
    assert tips.tips(("env",)) == {"env": tip(path, "env-next")}
    git(path, "pack-refs", "--all")
    commit_files(path, "env", {"a.yaml": "3\n"}, "loose over packed")
    assert tips.tips(("env",)) == {"env": tip(path, "env")}
    git(path, "update-ref", "-d", "refs/heads/env-next")
    assert tips.tips(("env-next", "env")) == {"env": tip(path, "env")}


def test_a_missing_branch_or_one_that_names_no_commit_is_left_out(
    path: Path, tips: BranchTips
) -> None:
    tree = git(path, "rev-parse", "env^{tree}").strip()
    (path / "refs" / "heads" / "a-tree").write_text(tree + "\n")  # git refuses to write it
    assert tips.tips(("nope", "a-tree", "env")) == {"env": tip(path, "env")}
    assert tips.tips(("a b", "x\ny", "")) == {}  # names git cannot hold: none of them exists


def test_a_killed_reader_is_started_again_by_the_next_read(path: Path, tips: BranchTips) -> None:
    tips.tips(("env",))
    process = tips._process
    assert process is not None
    process.kill()
    process.wait()
    assert tips.tips(("env",)) == {"env": tip(path, "env")}
    assert tips._process is not process


def test_a_repository_made_again_at_the_same_path_is_not_read_from_the_old_one(
    path: Path, tips: BranchTips, tmp_path: Path
) -> None:
    tips.tips(("env",))
    shutil.rmtree(path)
    init_bare(path)
    commit_files(path, "env", {"b.yaml": "1\n"}, "another history")
    assert tips.tips(("env",)) == {"env": tip(path, "env")}


def test_a_repository_gone_is_not_found(path: Path, tmp_path: Path) -> None:
    with pr_open(path, tmp_path) as (repo, scm, _):
        shutil.rmtree(path)
        with pytest.raises(ScmNotFound):
            scm.find_open_pull_request(repo=repo, head="env-next", base="env")


def test_pull_request_calls_start_no_git_process_once_the_reader_runs(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, scm = local_scm(path, tmp_path)
    head = tip(path, "env-next")
    started = processes(monkeypatch)
    try:
        opened = open_pr(scm, repo)
        for _ in range(20):
            found = scm.find_open_pull_request(repo=repo, head="env-next", base="env")
            assert found is not None and found.head_sha == head
        assert opened.head_sha == head
    finally:
        scm.close()
    # The persistent reader alone: the merged-by-hand check walks the base's parents in it.
    assert started == [["git", "cat-file", "--batch"]]


def test_a_commits_parents_are_read_and_what_is_no_commit_has_none(
    path: Path, tips: BranchTips
) -> None:
    base, proposed = tip(path, "env"), tip(path, "env-next")
    assert tips.parents(proposed) == [base]
    assert tips.parents(base) == []  # the root
    git(path, "update-ref", "refs/heads/merged", merge_commit(path, base, proposed))
    assert tips.parents(tip(path, "merged")) == [base, proposed]
    tree = git(path, "rev-parse", "env^{tree}").strip()
    assert tips.parents(tree) is None
    assert tips.parents("0" * 40) is None
    assert tips.parents("a b") is None and tips.parents("") is None
    assert tips.tips(("env",)) == {"env": base}  # the reader still in step after those


def merge_commit(path: Path, first: str, second: str) -> str:
    tree = git(path, "rev-parse", f"{second}^{{tree}}").strip()
    return git(path, "commit-tree", tree, "-p", first, "-p", second, "-m", "merge").strip()


@pytest.mark.parametrize("behind", [1, 15, 16, 40])
def test_a_pr_merged_by_hand_is_found_however_far_the_base_moved_since(
    path: Path, tmp_path: Path, behind: int
) -> None:
    """Near the tip the walk through the reader answers; past it, ``git merge-base``."""
    with pr_open(path, tmp_path) as (repo, scm, opened):
        merge = merge_commit(path, tip(path, "env"), opened.head_sha)
        git(path, "update-ref", "refs/heads/env", merge)
        for n in range(behind - 1):
            commit_files(path, "env", {"later.yaml": f"{n}\n"}, f"later {n}")
        assert scm.find_open_pull_request(repo=repo, head="env-next", base="env") is None
        [merged] = scm.pull_requests(repo=repo)
        assert merged.number == opened.number and merged.state == PullRequestState.MERGED


def test_a_pr_whose_head_the_base_does_not_hold_stays_open_however_long_the_history(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the walk, ``git merge-base`` answers once; the answer is kept."""
    with pr_open(path, tmp_path) as (repo, scm, opened):
        for n in range(40):  # a base history longer than the walk: merge-base says no
            commit_files(path, "env", {"other.yaml": f"{n}\n"}, f"other {n}")
        found = scm.find_open_pull_request(repo=repo, head="env-next", base="env")
        assert found is not None and found.number == opened.number
        started = processes(monkeypatch)
        for _ in range(5):
            again = scm.find_open_pull_request(repo=repo, head="env-next", base="env")
            assert again is not None and again.number == opened.number
        assert started == []


def processes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argument lists of the processes started from now on."""
    started: list[list[str]] = []
    real: Any = subprocess.Popen.__init__

    def counting(self: object, args: list[str], *rest: object, **kw: object) -> None:
        started.append([str(a) for a in args])
        real(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", counting)
    return started
