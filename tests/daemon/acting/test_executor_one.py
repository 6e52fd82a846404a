"""The executor's per-action cases (``Executor._one``) on a real repository and the local
SCM: a status written is told on its environment and commit; an approval, an enqueue and
the "ours" merge that keeps a promotion mergeable ask for a reconcile at once; an enqueue
the gates no longer allow is deferred, saying why; the "ours" merge is told with the
commit it pushed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import VALUES, commit_files
from promoter.engine import (
    EnqueuePullRequest,
    MergeActiveIntoProposed,
    SetCommitStatus,
    decide,
    operations,
)
from promoter.models import CommitStatus, Phase
from tests.daemon.acting.executor_setting import DEV, QueueingScm, Setting, opened


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Setting]:
    with opened(tmp_path) as s:
        yield s


def test_a_status_written_is_told_on_its_environment_and_commit(setting: Setting) -> None:
    status = CommitStatus(
        key="promoter-previous-env", phase=Phase.SUCCESS, description="nothing before dev"
    )
    action = SetCommitStatus(environment=0, sha=setting.head, status=status)

    outcome = setting.run(setting.snapshot(), [action])

    assert outcome.written == [action]
    on_scm = setting.plugin.get_commit_statuses(repo=setting.repo, sha=setting.head)
    assert [(s.key, s.phase) for s in on_scm] == [("promoter-previous-env", Phase.SUCCESS)]
    [told] = setting.events
    assert (told.kind, told.strategy, told.environment, told.sha) == (
        "status",
        "guestbook",
        DEV,
        setting.head,
    )
    assert told.message == "promoter-previous-env: nothing before dev"


def test_an_approval_is_given_and_asks_for_a_reconcile_at_once(setting: Setting) -> None:
    snapshot = setting.snapshot()
    outcome = setting.run(snapshot, operations.approve(snapshot, 0, user="ada"))
    reviews = setting.plugin.get_reviews(repo=setting.repo, number=setting.pr_number())
    assert [(r.user, r.commit_sha) for r in reviews] == [("ada", setting.head)]
    assert outcome.requeue_after == 0.0


# --- the "ours" merge that keeps a promotion mergeable ----------------------------------


def conflicting(setting: Setting) -> MergeActiveIntoProposed:
    """A person's hotfix on dev that conflicts with its promotion: what the engine does."""
    commit_files(setting.gitops.path, DEV, {VALUES: "image: guestbook:1.0.1\n"}, "hotfix")
    setting.runtime.mirrors.invalidate("gitops")
    decision = decide(setting.snapshot())
    [fix] = [a for a in decision.actions if isinstance(a, MergeActiveIntoProposed)]
    return fix


def test_the_ours_merge_is_told_with_the_commit_it_pushed_and_asks_for_a_reconcile(
    setting: Setting,
) -> None:
    fix = conflicting(setting)
    outcome = setting.run(setting.snapshot(), [fix])
    pushed = setting.gitops.tip(f"{DEV}-next")
    assert pushed != fix.proposed_sha
    assert outcome.requeue_after == 0.0
    [told] = setting.events
    assert (told.kind, told.strategy, told.environment, told.sha) == (
        "mergeable",
        "guestbook",
        DEV,
        pushed,
    )
    assert told.message == f"{DEV} merged into {DEV}-next"


def test_an_ours_merge_a_hydrator_push_raced_is_not_told_but_read_again_at_once(
    setting: Setting,
) -> None:
    fix = conflicting(setting)
    snapshot = setting.snapshot()
    setting.gitops.change("1.2.0", "Bump guestbook to 1.2.0")  # the hydrator pushes first
    outcome = setting.run(snapshot, [fix])
    assert setting.events == []
    assert outcome.requeue_after == 0.0
    assert setting.gitops.tip(f"{DEV}-next") != fix.proposed_sha  # the hydrator's push kept


# --- an enqueue, on an SCM with a merge queue -----------------------------------------


@pytest.fixture
def queueing(tmp_path: Path) -> Iterator[Setting]:
    with opened(tmp_path, queueing=True, environments={"dev": "mergeQueue: true"}) as s:
        yield s


def enqueue(setting: Setting) -> EnqueuePullRequest:
    return EnqueuePullRequest(
        environment=0,
        number=setting.pr_number(),
        expected_head_sha=setting.head,
        dry_sha=setting.change,
        attempt=1,
        required_keys=("ci",),
    )


def scm(setting: Setting) -> QueueingScm:
    assert setting.queueing is not None
    return setting.queueing


def test_an_enqueue_puts_the_pull_request_in_the_queue_and_asks_for_a_reconcile(
    queueing: Setting,
) -> None:
    scm(queueing).queued.add(DEV)
    queueing.ci(Phase.SUCCESS)
    action = enqueue(queueing)
    outcome = queueing.run(queueing.snapshot(), [action])
    assert scm(queueing).queue == {action.number: queueing.head}
    assert (outcome.deferred, outcome.requeue_after) == ({}, 0.0)
    attempt = queueing.snapshot().environments[0].ledger.queue
    assert attempt is not None and (attempt.number, attempt.attempts) == (action.number, 1)


def test_an_enqueue_whose_gate_turned_pending_is_deferred_saying_why(queueing: Setting) -> None:
    scm(queueing).queued.add(DEV)
    queueing.ci(Phase.PENDING)
    outcome = queueing.run(queueing.snapshot(), [enqueue(queueing)])
    assert scm(queueing).queue == {}
    assert outcome.deferred == {DEV: f"merge deferred: ci is pending on {queueing.head[:7]}"}
    assert outcome.requeue_after == 0.0
