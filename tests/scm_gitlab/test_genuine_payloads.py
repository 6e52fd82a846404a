"""The plugin reads GitLab's genuine REST bodies (``tests/fixtures/gitlab/rest``) right.

Each test stubs one exchange with ``responses`` using a body copied from GitLab or
from a client library's captures, so the parsing is checked against real shapes
rather than against the fake's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmConflict
from promoter.models import Phase, PullRequestState
from scm_plugins.gitlab import GitLabScm
from scm_plugins.gitlab.merge_requests import to_pull_request
from tests.scm_gitlab.conftest import TOKEN, TOKEN_ENV

URL = "https://gitlab.com"
API = f"{URL}/api/v4/projects/278964"


def genuine(genuine_fixtures: Path, name: str) -> Any:
    return json.loads((genuine_fixtures / "gitlab" / "rest" / name).read_text(encoding="utf-8"))


@pytest.fixture
def gitlab_com(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[GitLabScm]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    provider = ScmProvider.model_validate(
        {"name": "gl", "gitlab": {"token": {"fromEnv": TOKEN_ENV}}}
    )
    plugin = GitLabScm(provider=provider, state_dir=str(tmp_path))
    yield plugin
    plugin.close()


@pytest.fixture
def repo() -> Repository:
    return Repository(
        name="ee",
        url="https://gitlab.com/gitlab-org/gitlab-ee.git",
        project_id=278964,
        scm_provider="gl",
    )


@pytest.fixture
def mock() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock() as stub:
        yield stub


def test_a_captured_gitlab_com_merge_request_reads_as_an_open_draft_pull_request(
    genuine_fixtures: Path,
    gitlab_com: GitLabScm,
    repo: Repository,
    mock: responses.RequestsMock,
) -> None:
    body = genuine(genuine_fixtures, "go-gitlab/get_merge_request.json")
    mock.add(responses.GET, f"{API}/merge_requests", json=[body])
    pr = gitlab_com.find_open_pull_request(repo=repo, head="delete-designs-v2", base="master")
    assert pr is not None
    assert (pr.id, pr.number, pr.state, pr.draft) == (
        "33092005",
        14656,
        PullRequestState.OPEN,
        True,
    )
    assert (pr.head_branch, pr.base_branch) == ("delete-designs-v2", "master")
    assert pr.head_sha == "8e0b45049b6253b8984cde9241830d2851168142"
    assert "backend" in pr.labels
    assert pr.url == "https://gitlab.com/gitlab-org/gitlab-ee/merge_requests/14656"
    assert pr.merge_sha is None
    assert pr.author == "alexkalderimis"  # its approvals never count (four eyes)


def test_a_listed_merge_request_marked_work_in_progress_is_a_draft(genuine_fixtures: Path) -> None:
    listed = genuine(genuine_fixtures, "go-gitlab/get_merge_requests.json")
    drafts = {mr["iid"]: to_pull_request(mr).draft for mr in listed}
    assert drafts == {mr["iid"]: bool(mr.get("draft") or mr["work_in_progress"]) for mr in listed}
    assert drafts[15442] is True


def test_the_lowest_iid_wins_when_gitlab_lists_several_open_merge_requests(
    genuine_fixtures: Path, gitlab_com: GitLabScm, repo: Repository, mock: responses.RequestsMock
) -> None:
    listed = genuine(genuine_fixtures, "go-gitlab/get_merge_requests.json")
    mock.add(responses.GET, f"{API}/merge_requests", json=listed)
    pr = gitlab_com.find_open_pull_request(repo=repo, head="any", base="master")
    assert pr is not None and pr.number == min(mr["iid"] for mr in listed)


def test_the_merged_merge_request_from_python_gitlabs_tests_reads_as_merged(
    genuine_fixtures: Path,
) -> None:
    pr = to_pull_request(
        genuine(genuine_fixtures, "python-gitlab/test_merge_requests.mr_content.json")
    )
    assert (pr.number, pr.state, pr.title) == (1, PullRequestState.MERGED, "test1")


def test_a_merge_refused_on_the_captured_draft_says_it_is_a_draft(
    genuine_fixtures: Path, gitlab_com: GitLabScm, repo: Repository, mock: responses.RequestsMock
) -> None:
    body = genuine(genuine_fixtures, "go-gitlab/get_merge_request.json")
    mock.add(
        responses.PUT,
        f"{API}/merge_requests/14656/merge",
        status=405,
        json={"message": "405 Method Not Allowed"},
    )
    mock.add(responses.GET, f"{API}/merge_requests/14656", json=body)
    with pytest.raises(ScmConflict, match="draft"):
        gitlab_com.merge_pull_request(
            repo=repo, number=14656, expected_head_sha=body["sha"], message="Promote"
        )
    sent = json.loads(mock.calls[0].request.body or b"{}")
    assert sent == {
        "sha": body["sha"],
        "should_remove_source_branch": False,
        "merge_commit_message": "Promote",
    }


def test_the_documented_statuses_and_pipeline_become_gates(
    genuine_fixtures: Path, gitlab_com: GitLabScm, repo: Repository, mock: responses.RequestsMock
) -> None:
    statuses = genuine(genuine_fixtures, "drone-go-scm/statuses.json")
    pipeline = genuine(genuine_fixtures, "python-gitlab/test_pipelines.pipeline_content.json")
    sha = statuses[0]["sha"]
    mock.add(
        responses.GET, re.compile(rf"{API}/repository/commits/{sha}/statuses.*"), json=statuses
    )
    mock.add(responses.GET, re.compile(rf"{API}/pipelines\?.*"), json=[pipeline])
    gates = {s.key: s for s in gitlab_com.get_commit_statuses(repo=repo, sha=sha)}
    assert set(gates) == {"default", "pipeline"}
    assert (gates["default"].phase, gates["default"].description) == (
        Phase.PENDING,
        "the dude abides",
    )
    assert gates["default"].url == "https://gitlab.example.com/thedude/gitlab-ce/builds/91"
    assert gates["pipeline"].phase is Phase.PENDING
    assert gates["pipeline"].url == "https://example.com/foo/bar/pipelines/46"
    assert gates["pipeline"].updated_at.isoformat().startswith("2016-08-11T11:32:35")


def test_a_status_write_accepts_gitlabs_documented_answer(
    genuine_fixtures: Path, gitlab_com: GitLabScm, repo: Repository, mock: responses.RequestsMock
) -> None:
    from promoter.models import CommitStatus

    answer = genuine(genuine_fixtures, "drone-go-scm/status.json")
    mock.add(responses.POST, f"{API}/statuses/{answer['sha']}", status=201, json=answer)
    gitlab_com.set_commit_status(
        repo=repo, sha=answer["sha"], status=CommitStatus(key="default", phase=Phase.PENDING)
    )
    assert json.loads(mock.calls[0].request.body or b"{}") == {
        "state": "pending",
        "name": "default",
        "description": "",
    }
