"""Rule 8 at its edges: what an environment says while its revert PR is open (merged by
the promoter, or waiting for a person), no second revert while one is in flight, no revert
when auto-revert is off or the environment is paused, and a failure that has lasted exactly
the settle time reverts.
"""

from __future__ import annotations

from promoter.engine import decide
from promoter.engine.core.actions import EnvState, MergePullRequest, OpenRevert, PauseEnvironment
from promoter.engine.core.ledger_state import EnvLedger
from promoter.engine.core.snapshot import AutoRevertPolicy, Snapshot
from promoter.models import PullRequest, PullRequestState

from ..strategies import dry
from .test_revert import SETTLE, edit, failing, healthy, kinds, revert_of, staging

BRANCH = "environment/staging"


def revert_open(*, auto_merge: bool) -> Snapshot:
    """Staging on 5, its revert back to 3 open as PR #99 on the revert's own head."""
    record = revert_of(BRANCH, 5, 3, auto_merge=auto_merge)
    pr = PullRequest(
        id="99",
        number=99,
        head_branch=record.branch,
        base_branch=BRANCH,
        head_sha=record.revert_sha,
        state=PullRequestState.OPEN,
    )
    return edit(staging(reverts=(record,)), 1, revert_pull_request=pr)


def test_an_open_revert_pr_the_promoter_merges_says_so() -> None:
    decision = decide(revert_open(auto_merge=True))
    verdict = decision.environments[1]
    assert (verdict.state, verdict.reason) == (
        EnvState.REVERTING,
        f"merging revert PR #99 back to {dry(3)[:7]}",
    )
    assert [a.number for a in decision.actions if isinstance(a, MergePullRequest)] == [99]


def test_an_open_revert_pr_without_auto_merge_waits_for_a_person_and_says_why() -> None:
    decision = decide(revert_open(auto_merge=False))
    verdict = decision.environments[1]
    assert (verdict.state, verdict.reason) == (
        EnvState.REVERTING,
        f"revert PR #99 back to {dry(3)[:7]} waits for a person (health failed)",
    )
    assert [a for a in decision.actions if isinstance(a, MergePullRequest)] == []


def test_a_failure_while_a_revert_pr_is_open_opens_no_second_revert() -> None:
    snapshot = failing(revert_open(auto_merge=True), 1, ago=SETTLE + 1)
    decision = decide(snapshot)
    assert kinds(snapshot, OpenRevert) == []
    assert kinds(snapshot, PauseEnvironment) == []
    assert [a.number for a in decision.actions if isinstance(a, MergePullRequest)] == [99]
    assert decision.environments[1].reason == f"merging revert PR #99 back to {dry(3)[:7]}"


def test_a_settled_failure_is_not_reverted_when_auto_revert_is_off() -> None:
    snapshot = failing(staging(), 1, ago=SETTLE + 1)
    off = edit(snapshot, 1, auto_revert=AutoRevertPolicy(enabled=False, settle_time=SETTLE))
    assert kinds(off, OpenRevert) == []
    assert decide(off).environments[1].state is not EnvState.REVERTING


def test_a_settled_failure_of_a_paused_environment_is_not_reverted() -> None:
    snapshot = failing(staging(), 1, ago=SETTLE + 1)
    paused = edit(
        snapshot,
        1,
        ledger=EnvLedger(healthy=healthy(BRANCH, 3), paused="health failed after a revert"),
    )
    assert kinds(paused, OpenRevert) == []
    assert kinds(paused, PauseEnvironment) == []


def test_a_failure_that_has_lasted_exactly_the_settle_time_is_reverted() -> None:
    snapshot = failing(staging(), 1, ago=SETTLE)
    [revert] = kinds(snapshot, OpenRevert)
    assert revert.restore.dry_sha == dry(3)
    assert decide(snapshot).environments[1].state is EnvState.REVERTING
