"""The local SCM: idempotent PRs, guarded real merges, statuses; on real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli.sandbox import commit_files, git, init_bare
from promoter.config import LocalProvider, Repository, ScmProvider
from promoter.errors import ScmConflict, ScmNotFound
from promoter.models import CommitStatus, Phase, PullRequestState
from scm_plugins.local import LocalScm


def promotion_repository(path: Path) -> Path:
    """A bare repository with an environment branch and its ``-next`` branch one change ahead."""
    init_bare(path)
    commit_files(path, "env", {"a.yaml": "1\n"}, "base")
    git(path, "branch", "env-next", "env")
    commit_files(path, "env-next", {"a.yaml": "2\n"}, "proposed")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    path = promotion_repository(tmp_path / "r.git")
    return Repository(name="r", url=str(path), scm_provider="local")


@pytest.fixture
def scm(tmp_path: Path) -> LocalScm:
    return LocalScm(
        provider=ScmProvider(name="local", local=LocalProvider()), state_dir=str(tmp_path / "s")
    )


def open_pr(scm: LocalScm, repo: Repository) -> int:
    pr = scm.open_pull_request(
        repo=repo, head="env-next", base="env", title="t", body="b", labels=("promotion",)
    )
    return pr.number


def test_opening_twice_gives_the_same_pull_request(scm: LocalScm, repo: Repository) -> None:
    assert open_pr(scm, repo) == open_pr(scm, repo)
    assert len(scm.pull_requests(repo=repo)) == 1


def test_a_merge_is_a_real_two_parent_commit_with_the_head_tree(
    scm: LocalScm, repo: Repository
) -> None:
    path = Path(repo.url)
    number = open_pr(scm, repo)
    head, base = git(path, "rev-parse", "env-next"), git(path, "rev-parse", "env")
    merge = scm.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert git(path, "rev-parse", "env") == merge
    assert git(path, "rev-list", "--parents", "-n1", merge).split()[1:] == [base, head]
    assert git(path, "rev-parse", f"{merge}^{{tree}}") == git(path, "rev-parse", f"{head}^{{tree}}")
    assert scm.pull_requests(repo=repo)[0].state is PullRequestState.MERGED


def test_a_merge_is_refused_when_the_head_moved(scm: LocalScm, repo: Repository) -> None:
    path = Path(repo.url)
    number = open_pr(scm, repo)
    stale = git(path, "rev-parse", "env-next")
    commit_files(path, "env-next", {"a.yaml": "3\n"}, "newer")
    before = git(path, "rev-parse", "env")
    with pytest.raises(ScmConflict, match="moved"):
        scm.merge_pull_request(repo=repo, number=number, expected_head_sha=stale, message="m")
    assert git(path, "rev-parse", "env") == before


def test_a_pull_request_merged_by_hand_is_no_longer_open(scm: LocalScm, repo: Repository) -> None:
    path = Path(repo.url)
    open_pr(scm, repo)
    git(path, "update-ref", "refs/heads/env", git(path, "rev-parse", "env-next"))
    assert scm.find_open_pull_request(repo=repo, head="env-next", base="env") is None
    assert scm.pull_requests(repo=repo)[0].state is PullRequestState.MERGED


def test_closing_keeps_the_comment_and_a_closed_pr_cannot_merge(
    scm: LocalScm, repo: Repository
) -> None:
    number = open_pr(scm, repo)
    scm.close_pull_request(repo=repo, number=number, comment="nothing to promote")
    assert scm.store.comments(number) == ["nothing to promote"]
    with pytest.raises(ScmConflict, match="closed"):
        scm.merge_pull_request(repo=repo, number=number, expected_head_sha="a" * 40, message="m")


def test_opening_against_a_missing_branch_is_not_found(scm: LocalScm, repo: Repository) -> None:
    with pytest.raises(ScmNotFound):
        scm.open_pull_request(repo=repo, head="nope", base="env", title="t", body="", labels=())


def test_statuses_are_stored_latest_per_key(scm: LocalScm, repo: Repository) -> None:
    sha = "a" * 40
    scm.set_commit_status(repo=repo, sha=sha, status=CommitStatus(key="ci", phase=Phase.PENDING))
    scm.set_commit_status(repo=repo, sha=sha, status=CommitStatus(key="ci", phase=Phase.SUCCESS))
    scm.set_commit_status(repo=repo, sha=sha, status=CommitStatus(key="lint", phase=Phase.FAILURE))
    got = {s.key: s.phase for s in scm.get_commit_statuses(repo=repo, sha=sha)}
    assert got == {"ci": Phase.SUCCESS, "lint": Phase.FAILURE}
