"""Reviewer requests on GitLab: users by username and the members of groups become the MR's
reviewers, people already reviewing stay, ids are looked up once, and an unknown user is
refused (the promoter reports it and does not ask again)."""

from __future__ import annotations

import pytest

from promoter.config import Repository
from promoter.errors import ScmConflict
from scm_plugins.gitlab import GitLabScm
from scm_plugins.protocol import ReviewerRequests

from .conftest import scm_calls
from .fake_gitlab import FakeGitLab


def test_users_and_group_members_are_requested_and_present_reviewers_stay(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    assert isinstance(plugin, ReviewerRequests)
    for name in ("ada", "grace", "linus", "kept"):
        fake.add_user(name)
    fake.groups["acme/sre"] = ["grace", "linus"]
    mr = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    [project] = fake.projects.values()
    project.mrs[mr.number]["reviewer_ids"] = [fake.users["kept"]]
    plugin.request_reviewers(repo=repo, number=mr.number, users=["ada"], teams=["acme/sre"])
    reviewers = [r["username"] for r in fake.merge_requests(project.path)[0]["reviewers"]]
    assert reviewers == ["kept", "ada", "grace", "linus"]
    before = scm_calls(operation="get_user")
    plugin.request_reviewers(repo=repo, number=mr.number, users=["ada"], teams=[])
    assert scm_calls(operation="get_user") == before  # looked up once


def test_a_user_gitlab_does_not_know_is_refused(plugin: GitLabScm, repo: Repository) -> None:
    with pytest.raises(ScmConflict, match="no user 'ghost'"):
        plugin.request_reviewers(repo=repo, number=1, users=["ghost"], teams=[])
