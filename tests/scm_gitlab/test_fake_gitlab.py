"""The fake GitLab answers like GitLab where the plugin's tests rely on it."""

from __future__ import annotations

import json
from pathlib import Path

import requests

from tests.scm_gitlab.conftest import PROJECT, TOKEN, head
from tests.scm_gitlab.fake_gitlab import FakeGitLab

API = "https://gitlab.example.com/api/v4/projects/4242"
AUTH = {"PRIVATE-TOKEN": TOKEN}


def open_mr(title: str = "Promote") -> requests.Response:
    data = {"source_branch": "environment/dev-next", "target_branch": "environment/dev"}
    return requests.post(f"{API}/merge_requests", json={**data, "title": title}, headers=AUTH)


def test_merge_request_bodies_carry_every_field_of_the_genuine_answer(
    fake: FakeGitLab, genuine_fixtures: Path
) -> None:
    genuine = json.loads(
        (genuine_fixtures / "gitlab/rest/go-gitlab/get_merge_request.json").read_text()
    )
    created = open_mr()
    assert created.status_code == 201
    assert set(genuine) <= set(created.json())


def test_a_request_without_the_token_is_unauthorized(fake: FakeGitLab) -> None:
    answer = requests.get(f"{API}/merge_requests")
    assert (answer.status_code, answer.json()) == (401, {"message": "401 Unauthorized"})


def test_a_second_open_merge_request_for_the_same_branches_is_a_409(fake: FakeGitLab) -> None:
    open_mr()
    again = open_mr()
    assert again.status_code == 409
    assert again.json()["message"] == [
        "Another open merge request already exists for this source branch: !1"
    ]


def test_a_merge_with_a_stale_sha_is_a_409_naming_the_head(
    fake: FakeGitLab, bare_repo: Path
) -> None:
    iid = open_mr().json()["iid"]
    answer = requests.put(f"{API}/merge_requests/{iid}/merge", json={"sha": "0" * 40}, headers=AUTH)
    assert answer.status_code == 409
    actual = head(bare_repo, "environment/dev-next")
    assert answer.json()["message"] == f"SHA does not match HEAD of source branch: {actual}"


def test_pending_after_pending_is_refused_as_gitlab_does(fake: FakeGitLab, bare_repo: Path) -> None:
    sha = head(bare_repo, "environment/dev-next")
    status = {"state": "pending", "name": "promoter/previous-environment"}
    assert requests.post(f"{API}/statuses/{sha}", json=status, headers=AUTH).status_code == 201
    again = requests.post(f"{API}/statuses/{sha}", json=status, headers=AUTH)
    assert again.status_code == 400
    assert again.json()["message"].startswith("Cannot transition status via :enqueue from :pending")


def test_every_answer_carries_the_rate_limit_headers(fake: FakeGitLab) -> None:
    answer = requests.get(f"{API}/pipelines", headers=AUTH)
    assert answer.headers["RateLimit-Remaining"] == str(fake.rate_limit_remaining)
    assert fake.projects[PROJECT].pipelines == []
