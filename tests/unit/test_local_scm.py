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


class Killed(BaseException):
    """The process dies here (``SIGKILL`` runs no handler: nothing after it is written)."""


def die_before_recording_merges(scm: LocalScm, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on ``scm`` dies where it would record a PR merged (its branch moved)."""
    update = scm.store.update

    def die_on_merged(repo_name: str, pr: int, **values: object) -> None:
        if values.get("state") == "merged":
            raise Killed
        update(repo_name, pr, **values)

    monkeypatch.setattr(scm.store, "update", die_on_merged)


def test_a_merge_killed_after_the_base_moved_is_recorded_merged_with_the_head_it_merged(
    scm: LocalScm, repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between moving the base branch and recording the PR merged, then a new
    change on the head branch before the next life reads the PR: the PR is the merge
    of the head it merged, not an open PR of the new head (whose merge would leave the
    first merge no PR's)."""
    path = Path(repo.url)
    number = open_pr(scm, repo)
    head = git(path, "rev-parse", "env-next")
    die_before_recording_merges(scm, monkeypatch)
    with pytest.raises(Killed):
        scm.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    merge = git(path, "rev-parse", "env")
    assert git(path, "rev-list", "--parents", "-n1", merge).split()[2] == head
    commit_files(path, "env-next", {"a.yaml": "3\n"}, "the next change")

    reborn = LocalScm(provider=scm.provider, state_dir=str(tmp_path / "s"))
    assert reborn.find_open_pull_request(repo=repo, head="env-next", base="env") is None
    (pr,) = reborn.pull_requests(repo=repo)
    assert (pr.state, pr.head_sha, pr.merge_sha) == (PullRequestState.MERGED, head, merge)
    second = open_pr(reborn, repo)
    assert second != number


def test_a_merge_killed_before_the_base_moved_leaves_the_pull_request_open(
    scm: LocalScm, repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(repo.url)
    number = open_pr(scm, repo)
    head, base = git(path, "rev-parse", "env-next"), git(path, "rev-parse", "env")
    real_git = scm._git

    def die_on_update_ref(repository: Repository, *args: str) -> str:
        if args[0] == "update-ref":
            raise Killed
        return real_git(repository, *args)

    monkeypatch.setattr(scm, "_git", die_on_update_ref)
    with pytest.raises(Killed):
        scm.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    assert git(path, "rev-parse", "env") == base

    reborn = LocalScm(provider=scm.provider, state_dir=str(tmp_path / "s"))
    found = reborn.find_open_pull_request(repo=repo, head="env-next", base="env")
    assert found is not None and found.number == number
    merge = reborn.merge_pull_request(repo=repo, number=number, expected_head_sha=head, message="m")
    (pr,) = reborn.pull_requests(repo=repo)
    assert (pr.state, pr.head_sha, pr.merge_sha) == (PullRequestState.MERGED, head, merge)


def test_a_database_of_the_first_layout_gains_the_merge_columns(tmp_path: Path) -> None:
    import sqlite3

    db_path = tmp_path / "s" / "local-scm.sqlite3"
    db_path.parent.mkdir()
    with sqlite3.connect(db_path) as db:
        db.execute(
            "CREATE TABLE pull_requests (id INTEGER PRIMARY KEY AUTOINCREMENT, repo TEXT NOT NULL,"
            " head TEXT NOT NULL, base TEXT NOT NULL, title TEXT NOT NULL, body TEXT NOT NULL,"
            " labels TEXT NOT NULL, state TEXT NOT NULL, head_sha TEXT, merge_sha TEXT,"
            " created_at TEXT NOT NULL, updated_at TEXT NOT NULL)"
        )
        db.execute(
            "INSERT INTO pull_requests (repo, head, base, title, body, labels, state,"
            " created_at, updated_at) VALUES ('r', 'env-next', 'env', 't', 'b', '[]', 'open',"
            " 'x', 'x')"
        )
    repo = Repository(
        name="r", url=str(promotion_repository(tmp_path / "r.git")), scm_provider="local"
    )
    scm = LocalScm(
        provider=ScmProvider(name="local", local=LocalProvider()), state_dir=str(db_path.parent)
    )
    head = git(Path(repo.url), "rev-parse", "env-next")
    scm.merge_pull_request(repo=repo, number=1, expected_head_sha=head, message="m")
    assert scm.pull_requests(repo=repo)[0].state is PullRequestState.MERGED


def test_one_listing_records_every_merge_killed_half_way(
    scm: LocalScm, repo: Repository, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(repo.url)
    git(path, "branch", "other", "env")
    git(path, "branch", "other-next", "env-next")
    numbers = [
        scm.open_pull_request(repo=repo, head=f"{h}-next", base=h, title="t", body="b", labels=())
        for h in ("env", "other")
    ]
    die_before_recording_merges(scm, monkeypatch)
    for pr in numbers:
        head = git(path, "rev-parse", pr.head_branch)
        with pytest.raises(Killed):
            scm.merge_pull_request(repo=repo, number=pr.number, expected_head_sha=head, message="m")

    reborn = LocalScm(provider=scm.provider, state_dir=str(tmp_path / "s"))
    states = [(pr.state, pr.merge_sha) for pr in reborn.pull_requests(repo=repo)]
    assert states == [
        (PullRequestState.MERGED, git(path, "rev-parse", "env")),
        (PullRequestState.MERGED, git(path, "rev-parse", "other")),
    ]
