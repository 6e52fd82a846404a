"""Merge requests through the plugin, against the fake GitLab and a real bare repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmConflict
from promoter.models import PullRequest, PullRequestState
from scm_plugins.gitlab import GitLabScm
from tests.scm_gitlab.conftest import PROJECT, commit, git, head
from tests.scm_gitlab.fake_gitlab import FakeGitLab

HEAD, BASE = "environment/dev-next", "environment/dev"


def open_mr(plugin: GitLabScm, repo: Repository) -> PullRequest:
    return plugin.open_pull_request(
        repo=repo,
        head=HEAD,
        base=BASE,
        title="Promote v2 to dev",
        body="Changes: image v2",
        labels=("promotion", "dev"),
    )


def test_opening_a_merge_request_records_title_body_labels_and_head(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, bare_repo: Path
) -> None:
    pr = open_mr(plugin, repo)
    assert (pr.number, pr.state, pr.head_branch, pr.base_branch) == (
        1,
        PullRequestState.OPEN,
        HEAD,
        BASE,
    )
    assert pr.head_sha == head(bare_repo, HEAD)
    assert (pr.title, pr.body, pr.labels) == (
        "Promote v2 to dev",
        "Changes: image v2",
        ("promotion", "dev"),
    )
    assert pr.url == f"{fake.url}/{PROJECT}/-/merge_requests/1"
    [mr] = fake.merge_requests(PROJECT)
    assert pr.id == str(mr["id"])
    assert mr["force_remove_source_branch"] is False


def test_opening_twice_leaves_one_merge_request_and_returns_it(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    first = open_mr(plugin, repo)
    second = open_mr(plugin, repo)
    assert second.number == first.number
    assert len(fake.merge_requests(PROJECT)) == 1


def test_opening_after_a_crash_before_recording_returns_the_merge_request_already_opened(
    provider: ScmProvider, repo: Repository, fake: FakeGitLab, tmp_path: Path
) -> None:
    before_crash = GitLabScm(provider=provider, state_dir=str(tmp_path))
    opened = open_mr(before_crash, repo)
    before_crash.close()
    after_restart = GitLabScm(provider=provider, state_dir=str(tmp_path))
    assert after_restart.find_open_pull_request(repo=repo, head=HEAD, base=BASE) == opened
    assert open_mr(after_restart, repo).number == opened.number
    assert [mr["iid"] for mr in fake.merge_requests(PROJECT)] == [opened.number]


def test_no_open_merge_request_is_found_when_only_a_closed_one_exists(
    plugin: GitLabScm, repo: Repository
) -> None:
    assert plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE) is None
    pr = open_mr(plugin, repo)
    plugin.close_pull_request(repo=repo, number=pr.number, comment="")
    assert plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE) is None


def test_updating_changes_title_description_and_labels(plugin: GitLabScm, repo: Repository) -> None:
    pr = open_mr(plugin, repo)
    updated = plugin.update_pull_request(
        repo=repo, number=pr.number, title="Promote v3", body="new body", labels=("promotion",)
    )
    assert (updated.title, updated.body, updated.labels) == (
        "Promote v3",
        "new body",
        ("promotion",),
    )
    found = plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE)
    assert found is not None and found.title == "Promote v3"


def test_a_merge_is_a_merge_commit_of_the_source_tree_onto_the_target(
    plugin: GitLabScm, repo: Repository, bare_repo: Path
) -> None:
    pr = open_mr(plugin, repo)
    target_before = head(bare_repo, BASE)
    merge_sha = plugin.merge_pull_request(
        repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="Promote v2"
    )
    assert head(bare_repo, BASE) == merge_sha
    assert git(bare_repo, "rev-list", "--parents", "-n1", merge_sha).split()[1:] == [
        target_before,
        pr.head_sha,
    ]
    assert git(bare_repo, "rev-parse", f"{merge_sha}^{{tree}}") == git(
        bare_repo, "rev-parse", f"{pr.head_sha}^{{tree}}"
    )
    assert head(bare_repo, HEAD) == pr.head_sha, "the proposed branch is never deleted"
    assert plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE) is None


def test_a_merge_whose_head_moved_is_refused_and_the_target_stays(
    plugin: GitLabScm, repo: Repository, bare_repo: Path
) -> None:
    pr = open_mr(plugin, repo)
    target_before = head(bare_repo, BASE)
    moved = commit(bare_repo, HEAD, {"app.yaml": "image: v3\n"}, "hydrate v3")
    with pytest.raises(ScmConflict, match=f"head moved to {moved}"):
        plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )
    assert head(bare_repo, BASE) == target_before


@pytest.mark.parametrize("refusal", [405, 422])
def test_a_draft_merge_request_is_never_merged_and_the_error_says_so(
    genuine_fixtures: Path,
    bare_repo: Path,
    provider: ScmProvider,
    repo: Repository,
    fake: FakeGitLab,
    refusal: int,
) -> None:
    fake.draft_refusal_status = refusal
    plugin = GitLabScm(provider=provider, state_dir="unused")
    pr = plugin.open_pull_request(
        repo=repo, head=HEAD, base=BASE, title="Draft: promote", body="", labels=()
    )
    assert pr.draft
    target_before = head(bare_repo, BASE)
    with pytest.raises(ScmConflict, match="draft"):
        plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )
    assert head(bare_repo, BASE) == target_before


@pytest.mark.parametrize("code", [405, 406, 409, 422])
def test_every_refusal_code_of_any_gitlab_version_is_a_conflict(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, code: int
) -> None:
    pr = open_mr(plugin, repo)
    fake.fail_next("PUT", r"/merge$", code, body={"message": "Branch cannot be merged"})
    with pytest.raises(ScmConflict, match="GitLab refused it"):
        plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )


def test_a_merge_retried_after_it_went_through_returns_the_same_merge_sha(
    plugin: GitLabScm, repo: Repository
) -> None:
    pr = open_mr(plugin, repo)
    first = plugin.merge_pull_request(
        repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
    )
    again = plugin.merge_pull_request(
        repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
    )
    assert again == first


def test_a_closed_merge_request_is_not_merged(plugin: GitLabScm, repo: Repository) -> None:
    pr = open_mr(plugin, repo)
    plugin.close_pull_request(repo=repo, number=pr.number, comment="superseded")
    with pytest.raises(ScmConflict, match="is closed"):
        plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )


def test_squash_when_configured_makes_one_commit_on_the_target(
    monkeypatch: pytest.MonkeyPatch, fake: FakeGitLab, repo: Repository, bare_repo: Path
) -> None:
    monkeypatch.setenv("SQUASH_TOKEN", fake.token)
    provider = ScmProvider.model_validate(
        {
            "name": "gl",
            "gitlab": {"url": fake.url, "token": {"fromEnv": "SQUASH_TOKEN"}, "squash": True},
        }
    )
    plugin = GitLabScm(provider=provider, state_dir="unused")
    pr = open_mr(plugin, repo)
    target_before = head(bare_repo, BASE)
    merged = plugin.merge_pull_request(
        repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="Promote v2"
    )
    assert git(bare_repo, "rev-list", "--parents", "-n1", merged).split()[1:] == [target_before]
    assert git(bare_repo, "log", "-1", "--format=%s", merged) == "Promote v2"


def test_closing_leaves_the_note_then_closes(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    pr = open_mr(plugin, repo)
    plugin.close_pull_request(repo=repo, number=pr.number, comment="Would move prod backwards")
    [mr] = fake.merge_requests(PROJECT)
    assert mr["state"] == "closed"
    notes = [n["body"] for n in fake.projects[PROJECT].notes if n["noteable_iid"] == pr.number]
    assert notes == ["Would move prod backwards"]


def test_a_comment_is_a_note_on_the_merge_request(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    pr = open_mr(plugin, repo)
    plugin.comment_pull_request(repo=repo, number=pr.number, body="Blocked: ci is failing")
    assert [n["body"] for n in fake.projects[PROJECT].notes] == ["Blocked: ci is failing"]


@pytest.mark.parametrize(
    ("code", "message", "lasting"),
    [
        (406, "Branch cannot be merged", True),
        (405, "405 Method Not Allowed", False),
        (422, "Branch cannot be merged", True),
        (409, "SHA does not match HEAD of source branch: 0123abc", False),
    ],
)
def test_a_refused_merge_tells_a_lasting_refusal_from_a_temporary_one(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, code: int, message: str, lasting: bool
) -> None:
    pr = open_mr(plugin, repo)
    fake.fail_next("PUT", r"/merge$", code, body={"message": message})
    with pytest.raises(ScmConflict) as refused:
        plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha=pr.head_sha, message="m"
        )
    assert refused.value.lasting is lasting
