"""GitLab merge trains through the plugin and the fake GitLab: an MR added with its head as
the guard, its place read back, and an MR the train dropped reported as removed."""

from __future__ import annotations

import pytest

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmNotFound, ScmUnsupported
from scm_plugins.gitlab import GitLabScm
from scm_plugins.protocol import MergeQueues

from . import fake_gitlab_trains
from .conftest import PROJECT
from .fake_gitlab import FakeGitLab

CANCEL = "cancel_merge_when_pipeline_succeeds"


def test_a_merge_request_rides_the_train_and_one_dropped_is_removed(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    assert isinstance(plugin, MergeQueues)
    mr = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    with pytest.raises(ScmConflict):
        plugin.enqueue_pull_request(repo=repo, number=mr.number, expected_head_sha="0" * 40)
    [project] = fake.projects.values()
    assert project.train == {}
    added = plugin.enqueue_pull_request(repo=repo, number=mr.number, expected_head_sha=mr.head_sha)
    assert (added.queued, added.state) == (True, "idle")
    riding = plugin.queue_entry(repo=repo, number=mr.number)
    assert (riding.queued, riding.checks) == (True, "running")
    fake_gitlab_trains.drop(project, mr.number)
    left = plugin.queue_entry(repo=repo, number=mr.number)
    assert (left.queued, left.removed_reason) == (
        False,
        "removed from the merge train (it is open)",
    )
    plugin.enqueue_pull_request(repo=repo, number=mr.number, expected_head_sha=mr.head_sha)
    fake_gitlab_trains.merge(fake, project, mr.number)
    assert project.mrs[mr.number]["state"] == "merged"


def riding(plugin: GitLabScm, repo: Repository) -> int:
    """dev's MR opened and added to the train."""
    mr = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    plugin.enqueue_pull_request(repo=repo, number=mr.number, expected_head_sha=mr.head_sha)
    return mr.number


def test_a_merge_request_taken_off_the_train_by_cancelling_its_auto_merge_stays_off(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    number = riding(plugin, repo)
    [project] = fake.projects.values()
    out = plugin.dequeue_pull_request(repo=repo, number=number)
    assert (out.queued, out.merged) == (False, False)
    cancels = [p for m, p in fake.requests if m == "POST" and "cancel_merge_when" in p]
    assert cancels == [f"/projects/group%2Fsub%2Fapp/merge_requests/{number}/{CANCEL}"]
    fake_gitlab_trains.pipeline_done(fake, project, number, "success")
    assert project.mrs[number]["state"] == "opened"  # off the train: nothing merged it


def test_taking_off_an_mr_the_train_already_merged_answers_merged(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    number = riding(plugin, repo)
    [project] = fake.projects.values()
    fake_gitlab_trains.pipeline_done(fake, project, number, "success")
    answer = plugin.dequeue_pull_request(repo=repo, number=number)
    assert (answer.queued, answer.merged) == (False, True)


def test_taking_off_an_mr_no_longer_on_the_train_is_no_error_whatever_gitlab_answers(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    number = riding(plugin, repo)
    [project] = fake.projects.values()
    fake_gitlab_trains.drop(project, number)
    body = {"message": "Can't cancel the automatic merge"}
    fake.fail_next("POST", "cancel_merge_when_pipeline_succeeds", 406, body=body)  # the docs' 406
    answer = plugin.dequeue_pull_request(repo=repo, number=number)
    assert (answer.queued, answer.merged) == (False, False)
    assert plugin.dequeue_pull_request(repo=repo, number=number).queued is False  # its 201 error


def test_an_mr_gitlab_keeps_on_the_train_is_a_refusal(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    number = riding(plugin, repo)
    fake.fail_next("POST", "cancel_merge_when_pipeline_succeeds", 201, body={"status": "success"})
    with pytest.raises(ScmConflict, match="kept merge request"):
        plugin.dequeue_pull_request(repo=repo, number=number)


def test_a_new_commit_on_the_source_branch_takes_the_mr_off_the_train(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    number = riding(plugin, repo)
    [project] = fake.projects.values()
    project.git(
        "update-ref", "refs/heads/environment/dev-next", project.head("environment/dev") or ""
    )
    left = plugin.queue_entry(repo=repo, number=number)
    assert not left.queued and not left.merged


@pytest.mark.parametrize("status", [404, 403])
def test_an_instance_without_premium_says_it_lacks_merge_trains(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository, status: int
) -> None:
    """GitLab without Premium has no merge-train settings on the project and refuses the
    train's routes: named as what the instance lacks, not as a missing merge request."""
    mr = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    fake.fail_next(
        "POST", r"/merge_trains/merge_requests/", status, body={"message": "404 Not Found"}
    )
    fake.fail_next("GET", r"^/projects/[^/]+$", 200, body=fake.templates["project"])
    assert "merge_trains_enabled" not in fake.templates["project"]
    with pytest.raises(ScmUnsupported, match="this GitLab lacks it: merge trains"):
        plugin.enqueue_pull_request(repo=repo, number=mr.number, expected_head_sha=mr.head_sha)


def test_a_refused_train_on_a_premium_project_is_the_scms_own_refusal(
    plugin: GitLabScm, fake: FakeGitLab, repo: Repository
) -> None:
    fake.projects[PROJECT].merge_trains = True
    fake.fail_next("POST", r"/merge_trains/merge_requests/", 404, body={"message": "404 Not Found"})
    with pytest.raises(ScmNotFound):
        plugin.enqueue_pull_request(repo=repo, number=7, expected_head_sha="0" * 40)
