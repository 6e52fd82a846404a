"""The GitHub plugin's merge queue through the fake GitHub's GraphQL: the head guard holds
for an enqueue, and the queue's answer (its place, or why it left) is read back."""

from __future__ import annotations

import pytest

from promoter.config import Repository
from promoter.errors import ScmConflict
from scm_plugins.github import GitHubScm

from .fake_github import FakeGitHub

WHY = "the merge group's required checks failed"


def test_an_enqueue_whose_head_moved_is_refused_and_queues_nothing(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    fake.require_merge_queue("acme/deploy", "environment/dev")
    opened = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    with pytest.raises(ScmConflict, match="Expected head OID"):
        plugin.enqueue_pull_request(repo=repo, number=opened.number, expected_head_sha="0" * 40)
    assert not fake.in_queue("acme/deploy", opened.number)
    entry = plugin.enqueue_pull_request(
        repo=repo, number=opened.number, expected_head_sha=opened.head_sha
    )
    assert (entry.queued, entry.state) == (True, "QUEUED")
    assert plugin.queue_entry(repo=repo, number=opened.number).state == "AWAITING_CHECKS"
    fake.dequeue("acme/deploy", opened.number, WHY)
    left = plugin.queue_entry(repo=repo, number=opened.number)
    assert (left.queued, left.removed_reason) == (False, WHY)
    assert left.removed_at is not None
