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


def queued(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository, *, checks: tuple[str, ...]
) -> int:
    """dev's PR opened on a branch whose queue waits for ``checks``, and enqueued."""
    fake.require_merge_queue("acme/deploy", "environment/dev", checks=checks)
    opened = plugin.open_pull_request(
        repo=repo,
        head="environment/dev-next",
        base="environment/dev",
        title="t",
        body="",
        labels=(),
    )
    plugin.enqueue_pull_request(repo=repo, number=opened.number, expected_head_sha=opened.head_sha)
    return opened.number


def test_the_queue_merges_a_group_by_itself_once_its_checks_pass(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    number = queued(plugin, fake, repo, checks=("ci",))
    group = fake.merge_group("acme/deploy", number)
    fake.post_check_run(
        "acme/deploy", fake.pull("acme/deploy", number)["head"]["sha"], "ci", "completed", "success"
    )
    assert fake.in_queue("acme/deploy", number)  # the PR's head is not the group
    assert plugin.queue_entry(repo=repo, number=number).checks == "PENDING"
    fake.post_check_run("acme/deploy", group, "ci", "completed", "success")
    assert not fake.in_queue("acme/deploy", number)
    left = plugin.queue_entry(repo=repo, number=number)
    assert (left.queued, left.merged) == (False, True)


def test_a_group_whose_check_fails_is_dequeued_by_the_queue(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    number = queued(plugin, fake, repo, checks=("ci",))
    fake.post_status("acme/deploy", fake.merge_group("acme/deploy", number), "ci", "failure")
    left = plugin.queue_entry(repo=repo, number=number)
    assert (left.queued, left.merged) == (False, False)
    assert left.removed_reason == "the merge group's required checks failed"


def test_a_dequeued_pr_is_out_and_its_group_no_longer_merges(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    number = queued(plugin, fake, repo, checks=("ci",))
    group = fake.merge_group("acme/deploy", number)
    out = plugin.dequeue_pull_request(repo=repo, number=number)
    assert (out.queued, out.merged) == (False, False)
    fake.post_check_run("acme/deploy", group, "ci", "completed", "success")
    assert fake.pull("acme/deploy", number)["merged_at"] is None


def test_a_dequeue_github_refuses_for_a_pr_out_of_the_queue_is_answered_out(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    number = queued(plugin, fake, repo, checks=())
    fake.dequeue("acme/deploy", number, WHY)
    out = plugin.dequeue_pull_request(repo=repo, number=number)
    assert (out.queued, out.merged, out.removed_reason) == (False, False, WHY)
    answer = fake._graphql(
        query={},
        body={
            "query": "mutation { dequeuePullRequest }",
            "variables": {"id": f"PR_acme/deploy#{number}"},
        },
    )
    assert answer[2]["data"] is None
    assert answer[2]["errors"][0]["type"] == "UNPROCESSABLE"  # as GitHub refuses it


def test_a_dequeue_after_the_queue_merged_answers_merged(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository
) -> None:
    number = queued(plugin, fake, repo, checks=())
    fake.merge_from_queue("acme/deploy", number)
    answer = plugin.dequeue_pull_request(repo=repo, number=number)
    assert (answer.queued, answer.merged) == (False, True)


def test_a_dequeue_github_refuses_while_the_pr_stays_queued_is_a_conflict(
    plugin: GitHubScm, fake: FakeGitHub, repo: Repository, monkeypatch: pytest.MonkeyPatch
) -> None:
    number = queued(plugin, fake, repo, checks=())
    refused = {"data": None, "errors": [{"type": "UNPROCESSABLE", "message": "try later"}]}
    monkeypatch.setattr(fake, "_dequeue", lambda variables: refused)
    with pytest.raises(ScmConflict, match="try later"):
        plugin.dequeue_pull_request(repo=repo, number=number)
    assert fake.in_queue("acme/deploy", number)
