"""The local SCM reads branch tips through one persistent ``git cat-file`` per repository:
never a stale tip (a ref moved, packed, deleted, the repository made again), a process
that died is started again, and a pull request call starts no git process of its own."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promoter.cli.sandbox import commit_files, git, init_bare
from promoter.config import LocalProvider, Repository, ScmProvider
from promoter.errors import ScmNotFound
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
    repo = Repository(name="r", url=str(path), scm_provider="local")
    scm = LocalScm(
        provider=ScmProvider(name="local", local=LocalProvider()), state_dir=str(tmp_path / "s")
    )
    try:
        scm.open_pull_request(repo=repo, head="env-next", base="env", title="t", body="", labels=())
        shutil.rmtree(path)
        with pytest.raises(ScmNotFound):
            scm.find_open_pull_request(repo=repo, head="env-next", base="env")
    finally:
        scm.close()


def test_pull_request_calls_start_no_git_process_once_the_reader_runs(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = Repository(name="r", url=str(path), scm_provider="local")
    scm = LocalScm(
        provider=ScmProvider(name="local", local=LocalProvider()), state_dir=str(tmp_path / "s")
    )
    head = tip(path, "env-next")
    started: list[list[str]] = []
    real: Any = subprocess.Popen.__init__

    def counting(self: object, args: list[str], *rest: object, **kw: object) -> None:
        started.append([str(a) for a in args])
        real(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", counting)
    try:
        opened = scm.open_pull_request(
            repo=repo, head="env-next", base="env", title="t", body="", labels=()
        )
        for _ in range(20):
            found = scm.find_open_pull_request(repo=repo, head="env-next", base="env")
            assert found is not None and found.head_sha == head
        assert opened.head_sha == head
    finally:
        scm.close()
    # The persistent reader, and the merged-by-hand check (one merge-base per find).
    assert [a for a in started if "cat-file" in a] == [["git", "cat-file", "--batch-check"]]
    assert not [a for a in started if "for-each-ref" in a or "rev-parse" in a]
