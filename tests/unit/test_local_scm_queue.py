"""The local SCM's merge queue: a merge group per queued PR, merged once its checks pass,
taken out when a check fails, its head moves or someone asks; on real git."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli.sandbox import commit_files, git
from promoter.config import LocalMergeQueue, LocalProvider, Repository, ScmProvider
from promoter.errors import ScmConflict
from promoter.models import CommitStatus, Phase, PullRequestState
from scm_plugins.local import LocalScm
from scm_plugins.protocol import MergeQueueDetection, MergeQueues

from .test_local_scm import open_pr, promotion_repository


def status(key: str, phase: Phase) -> CommitStatus:
    return CommitStatus(key=key, phase=phase, description="", url="", source="ci")


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    path = promotion_repository(tmp_path / "r.git")
    return Repository(name="r", url=str(path), scm_provider="local")


@pytest.fixture
def scm(tmp_path: Path) -> LocalScm:
    queue = LocalMergeQueue(checks=["queue-ci"], branches=["env"])
    provider = ScmProvider(name="local", local=LocalProvider(merge_queue=queue))
    return LocalScm(provider=provider, state_dir=str(tmp_path / "s"))


def enqueued(scm: LocalScm, repo: Repository) -> tuple[int, str]:
    """PR ``env-next`` into ``env`` opened and enqueued; its number and merge group."""
    number = open_pr(scm, repo)
    head = git(Path(repo.url), "rev-parse", "env-next")
    scm.enqueue_pull_request(repo=repo, number=number, expected_head_sha=head)
    return number, scm.queue_groups(repo=repo)[number]


def test_the_local_scm_is_a_merge_queue_on_the_branches_it_is_set_on(
    scm: LocalScm, repo: Repository
) -> None:
    assert isinstance(scm, MergeQueues) and isinstance(scm, MergeQueueDetection)
    assert scm.merge_queue_required(repo=repo, branch="env")
    assert not scm.merge_queue_required(repo=repo, branch="other")


def test_a_queued_pr_merges_once_the_queues_checks_pass_on_its_merge_group(
    scm: LocalScm, repo: Repository
) -> None:
    path = Path(repo.url)
    base, head = git(path, "rev-parse", "env"), git(path, "rev-parse", "env-next")
    number, group = enqueued(scm, repo)
    assert git(path, "rev-list", "--parents", "-n1", group).split()[1:] == [base, head]
    waiting = scm.queue_entry(repo=repo, number=number)
    assert (waiting.queued, waiting.position, waiting.checks) == (True, 1, "PENDING")
    scm.set_commit_status(repo=repo, sha=head, status=status("queue-ci", Phase.SUCCESS))
    assert git(path, "rev-parse", "env") == base  # the PR head's checks are not the group's
    scm.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.SUCCESS))
    assert git(path, "rev-parse", "env") == group
    pr = scm.pull_requests(repo=repo)[0]
    assert pr.state is PullRequestState.MERGED and pr.merge_sha == group
    left = scm.queue_entry(repo=repo, number=number)
    assert (left.queued, left.merged, left.removed_reason) == (False, True, "merged")


def test_a_failed_check_on_the_group_takes_the_pr_out_saying_which(
    scm: LocalScm, repo: Repository
) -> None:
    number, group = enqueued(scm, repo)
    scm.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.FAILURE))
    left = scm.queue_entry(repo=repo, number=number)
    assert not left.queued and not left.merged
    assert left.removed_reason == "a required check failed on the merge group: queue-ci"
    assert scm.advance_queue(repo=repo) == []


def test_a_head_that_moves_takes_the_pr_out_of_the_queue(scm: LocalScm, repo: Repository) -> None:
    number, group = enqueued(scm, repo)
    commit_files(Path(repo.url), "env-next", {"a.yaml": "3\n"}, "newer")
    scm.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.SUCCESS))
    left = scm.queue_entry(repo=repo, number=number)
    assert not left.queued and "head moved" in left.removed_reason
    assert scm.pull_requests(repo=repo)[0].state is PullRequestState.OPEN


def test_a_base_that_moves_builds_the_group_again_with_its_checks_to_come(
    scm: LocalScm, repo: Repository
) -> None:
    path = Path(repo.url)
    number, group = enqueued(scm, repo)
    commit_files(path, "env", {"b.yaml": "1\n"}, "a hotfix")
    scm.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.SUCCESS))
    again = scm.queue_groups(repo=repo)[number]
    assert again != group and git(path, "rev-parse", f"{again}^1") == git(path, "rev-parse", "env")
    assert scm.queue_entry(repo=repo, number=number).checks == "PENDING"
    scm.set_commit_status(repo=repo, sha=again, status=status("queue-ci", Phase.SUCCESS))
    assert git(path, "rev-parse", "env") == again


def test_a_dequeued_pr_is_out_and_a_dequeue_of_one_not_queued_is_answered(
    scm: LocalScm, repo: Repository
) -> None:
    path = Path(repo.url)
    number, group = enqueued(scm, repo)
    out = scm.dequeue_pull_request(repo=repo, number=number)
    assert not out.queued and not out.merged
    again = scm.dequeue_pull_request(repo=repo, number=number)
    assert not again.queued and not again.merged
    scm.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.SUCCESS))
    assert git(path, "rev-parse", "env") != group  # no longer the queue's to merge


def test_a_dequeue_after_the_queue_merged_answers_merged(scm: LocalScm, repo: Repository) -> None:
    number, group = enqueued(scm, repo)
    scm.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.SUCCESS))
    answer = scm.dequeue_pull_request(repo=repo, number=number)
    assert not answer.queued and answer.merged


def test_enqueuing_refuses_a_moved_head_and_a_branch_without_a_queue(
    tmp_path: Path, scm: LocalScm, repo: Repository
) -> None:
    number = open_pr(scm, repo)
    with pytest.raises(ScmConflict, match="Expected head"):
        scm.enqueue_pull_request(repo=repo, number=number, expected_head_sha="0" * 40)
    plain = LocalScm(
        provider=ScmProvider(name="local", local=LocalProvider()), state_dir=str(tmp_path / "p")
    )
    other = open_pr(plain, repo)
    head = git(Path(repo.url), "rev-parse", "env-next")
    with pytest.raises(ScmConflict, match="no merge queue"):
        plain.enqueue_pull_request(repo=repo, number=other, expected_head_sha=head)
    assert not plain.merge_queue_required(repo=repo, branch="env")


def test_the_queue_survives_a_restart_of_the_scm(
    tmp_path: Path, scm: LocalScm, repo: Repository
) -> None:
    number, group = enqueued(scm, repo)
    scm.close()
    queue = LocalMergeQueue(checks=["queue-ci"], branches=["env"])
    provider = ScmProvider(name="local", local=LocalProvider(merge_queue=queue))
    again = LocalScm(provider=provider, state_dir=str(tmp_path / "s"))
    assert again.queue_groups(repo=repo) == {number: group}
    again.set_commit_status(repo=repo, sha=group, status=status("queue-ci", Phase.SUCCESS))
    assert git(Path(repo.url), "rev-parse", "env") == group
