"""Approvals through the GitLab plugin, for the approval gate, from GitLab's documented answer."""

from __future__ import annotations

import json
from pathlib import Path

from promoter.config import Repository
from scm_plugins.gitlab import GitLabScm
from scm_plugins.gitlab.approvals import approvers

from .fake_gitlab import FakeGitLab

EXAMPLE = (
    Path(__file__).resolve().parent.parent
    / "fixtures/gitlab/rest/gitlab-docs/merge_request_approvals.get.json"
)


def test_the_documented_answer_names_its_approvers() -> None:
    assert approvers(json.loads(EXAMPLE.read_text())) == [("root", 1, "Administrator")]


def test_the_plugin_reads_who_approved_and_their_groups(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    fake.fail_next(
        "GET", r"/merge_requests/5/approvals$", 200, body=json.loads(EXAMPLE.read_text())
    )
    fake.fail_next("GET", r"^/groups/platform%2Fsre/members/all/1$", 200, body={"id": 1})
    fake.fail_next("GET", r"^/groups/auditors/members/all/1$", 404, body={"message": "404"})
    reviews = plugin.get_reviews(repo=repo, number=5, teams=["platform/sre", "auditors"])
    assert [(r.user, r.approved, r.teams) for r in reviews] == [("root", True, ("platform/sre",))]
    assert reviews[0].name == "Administrator"  # matched against git authors' names too


def test_no_approvals_is_an_empty_list(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab
) -> None:
    answer = {**json.loads(EXAMPLE.read_text()), "approved_by": []}
    fake.fail_next("GET", r"/merge_requests/5/approvals$", 200, body=answer)
    assert plugin.get_reviews(repo=repo, number=5) == []
