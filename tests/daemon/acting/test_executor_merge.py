"""The executor's merges (``Executor._merge``) on a real repository and the local SCM: a
merge is told with its pull request, commits and link, and marks the commit it made as
new; a revert PR's merge is told as a revert; a merge the SCM refuses for want of its
merge queue is enqueued instead, and learnt, only where ``mergeQueue`` is unset and only
for a promotion."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import git
from promoter.daemon.acting.outcome import Outcome
from promoter.engine import HealthyRecord, MergePullRequest, Snapshot, operations
from promoter.errors import ScmConflict, ScmQueueRequired
from promoter.models import Phase, utcnow
from tests.daemon.acting.executor_setting import DEV, QueueingScm, Setting, opened


@pytest.fixture
def setting(tmp_path: Path) -> Iterator[Setting]:
    with opened(tmp_path) as s:
        yield s


def promotion(setting: Setting, snapshot: Snapshot) -> MergePullRequest:
    """dev's promotion merge, as the engine makes it from the PR it read."""
    pr = snapshot.environments[0].pull_request
    assert pr is not None and pr.head_sha == setting.head
    return MergePullRequest(
        environment=0,
        number=pr.number,
        expected_head_sha=setting.head,
        dry_sha=setting.change,
        message="Promote",
        required_keys=("ci",),
    )


def test_a_merge_is_told_with_its_pull_request_its_commits_and_its_link(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    snapshot = setting.snapshot()
    action = promotion(setting, snapshot)
    pr = snapshot.environments[0].pull_request
    assert pr is not None and pr.url

    outcome = setting.run(snapshot, [action])

    merged = setting.gitops.tip(DEV)
    assert merged != setting.head  # the local SCM made a merge commit
    assert (outcome.merged, outcome.merge_shas) == ([DEV], {DEV: merged})
    assert outcome.requeue_after == 0.0
    [told] = setting.told("merged")
    assert told.message == f"merged {setting.change[:7]}"
    assert (told.strategy, told.environment, told.sha, told.pr) == (
        "guestbook",
        DEV,
        setting.change,
        pr.number,
    )
    assert (told.dry_sha, told.hydrated_sha, told.link) == (setting.change, merged, pr.url)
    assert setting.told("reverted") == []


def test_the_commit_a_merge_made_is_known_to_have_no_statuses_but_those_webhooks_bring(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    snapshot = setting.snapshot()
    setting.run(snapshot, [promotion(setting, snapshot)])
    merged = setting.gitops.tip(DEV)
    # Read from the cache, not the SCM: the commit is new, its statuses come by webhook.
    assert setting.runtime.status_cache.get("gitops", merged) == []


def test_a_deferred_merge_is_not_told_and_leaves_the_pull_request_open(setting: Setting) -> None:
    setting.ci(Phase.PENDING)
    snapshot = setting.snapshot()
    outcome = setting.run(snapshot, [promotion(setting, snapshot)])
    assert outcome.deferred == {DEV: f"merge deferred: ci is pending on {setting.head[:7]}"}
    assert (outcome.merged, outcome.requeue_after) == ([], 0.0)
    assert setting.events == []
    pr = snapshot.environments[0].pull_request
    assert pr is not None and setting.pr_number() == pr.number


def test_a_merge_a_person_did_first_is_refused_and_not_told_as_the_promoters(
    setting: Setting,
) -> None:
    setting.ci(Phase.SUCCESS)
    snapshot = setting.snapshot()
    action = promotion(setting, snapshot)
    by_hand = setting.plugin.merge_pull_request(
        repo=setting.repo, number=action.number, expected_head_sha=setting.head, message="me"
    )
    outcome = Outcome()
    with pytest.raises(ScmConflict):
        setting.run(snapshot, [action], outcome)
    assert setting.gitops.tip(DEV) == by_hand  # merged once, by the person
    assert (outcome.merged, outcome.failed_environment) == ([], DEV)
    assert setting.events == []


def revert_pr_open(setting: Setting) -> Snapshot:
    """dev runs the bad 1.1.0, was healthy on 1.0.0, and its revert PR is open: the
    snapshot that sees it."""
    mirror = setting.mirror
    healthy = HealthyRecord(
        dry_sha=setting.first,
        hydrated_sha=setting.gitops.tip(DEV),
        healthy_since=utcnow(),
    )
    setting.runtime.ledger.update(mirror, "guestbook", DEV, lambda led: led.with_healthy(healthy))
    git(setting.gitops.path, "update-ref", f"refs/heads/{DEV}", setting.head)
    setting.runtime.mirrors.invalidate("gitops")
    snapshot = setting.snapshot()
    setting.run(snapshot, operations.revert(snapshot, 0, to=None, auto_merge=False, by="ada"))
    setting.runtime.mirrors.invalidate("gitops")
    setting.events.clear()
    return setting.snapshot()


def test_a_revert_pull_requests_merge_is_told_as_a_revert_with_its_link(
    setting: Setting,
) -> None:
    snapshot = revert_pr_open(setting)
    revert_pr = snapshot.environments[0].revert_pull_request
    assert revert_pr is not None and revert_pr.url
    actions = operations.merge(snapshot, 0, by="ada")
    assert not isinstance(actions, operations.Refusal)
    [merge] = actions
    assert isinstance(merge, MergePullRequest) and merge.purpose == "revert"

    outcome = setting.run(snapshot, actions)

    assert outcome.merged == [DEV]
    restored = setting.gitops.tip(DEV)
    assert setting.told("merged") == []
    [told] = setting.told("reverted")
    assert (told.environment, told.pr, told.sha, told.dry_sha) == (
        DEV,
        revert_pr.number,
        setting.first,
        setting.first,
    )
    assert (told.message, told.hydrated_sha, told.link) == (
        f"merged {setting.first[:7]}",
        restored,
        revert_pr.url,
    )


# --- the SCM's merge queue -------------------------------------------------------------


@pytest.fixture
def queueing(tmp_path: Path) -> Iterator[Setting]:
    with opened(tmp_path, queueing=True) as s:
        yield s


def scm(setting: Setting) -> QueueingScm:
    assert setting.queueing is not None
    return setting.queueing


def test_a_merge_refused_for_want_of_the_queue_is_enqueued_instead_and_the_queue_learnt(
    queueing: Setting,
) -> None:
    # The promoter read "no queue" for dev (kept an hour); a queue rule was added since.
    assert queueing.snapshot().environments[0].queueing.on is False
    scm(queueing).queued.add(DEV)
    queueing.ci(Phase.SUCCESS)
    snapshot = queueing.snapshot()
    assert snapshot.environments[0].queueing.from_scm
    dev_before = queueing.gitops.tip(DEV)

    outcome = queueing.run(snapshot, [promotion(queueing, snapshot)])

    number = queueing.pr_number()
    assert scm(queueing).queue == {number: queueing.head}
    assert queueing.gitops.tip(DEV) == dev_before
    assert (outcome.merged, outcome.deferred, outcome.requeue_after) == ([], {}, 0.0)
    assert queueing.events == []
    after = queueing.snapshot().environments[0]
    assert after.queueing.on is True  # learnt from the refusal, not read again in an hour
    assert after.ledger.queue is not None
    assert (after.ledger.queue.number, after.ledger.queue.head_sha) == (number, queueing.head)


def test_a_merge_refused_for_want_of_the_queue_where_merge_queue_is_false_is_an_error(
    tmp_path: Path,
) -> None:
    with opened(tmp_path, queueing=True, environments={"dev": "mergeQueue: false"}) as s:
        scm(s).queued.add(DEV)
        s.ci(Phase.SUCCESS)
        snapshot = s.snapshot()
        assert not snapshot.environments[0].queueing.from_scm
        with pytest.raises(ScmQueueRequired):
            s.run(snapshot, [promotion(s, snapshot)])
        assert scm(s).queue == {}
        assert s.snapshot().environments[0].ledger.queue is None


def test_a_revert_refused_for_want_of_the_queue_is_an_error_and_never_enqueued(
    queueing: Setting,
) -> None:
    snapshot = revert_pr_open(queueing)
    assert snapshot.environments[0].queueing.from_scm
    scm(queueing).queued.add(DEV)
    with pytest.raises(ScmQueueRequired):
        queueing.run(snapshot, operations.merge(snapshot, 0, by="ada"))
    assert scm(queueing).queue == {}
    assert queueing.snapshot().environments[0].ledger.queue is None
