"""GitLab merge trains through the plugin and the fake GitLab: an MR added with its head as
the guard, its place read back, and an MR the train dropped reported as removed."""

from __future__ import annotations

import pytest

from promoter.config import Repository
from promoter.errors import ScmConflict
from scm_plugins.gitlab import GitLabScm
from scm_plugins.protocol import MergeQueues

from . import fake_gitlab_trains
from .fake_gitlab import FakeGitLab


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
