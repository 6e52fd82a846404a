"""Rules 2, 6 and 7 at their edges: an unreadable environment downstream does not hide a
later one the promotion would move backwards; a ready change without a PR and without
auto-merge says it waits for a person; an active commit that names no dry commit, or whose
metadata cannot be read, is never recorded healthy.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from promoter.engine import ClosePullRequest, EnvState, MergePullRequest, RecordHealthy, decide

from .strategies import Env, build, short
from .test_decide import actions, promotable


def test_a_ready_change_without_a_pr_or_auto_merge_says_it_waits_for_a_person() -> None:
    decision = decide(build(promotable(pr="none", auto_merge=False)))
    verdict = decision.environments[0]
    assert (verdict.state, verdict.reason) == (
        EnvState.READY,
        "every gate passes; waiting for a person to merge",
    )
    assert decision.requeue_after is None


@pytest.mark.parametrize(
    "unreadable",
    [
        pytest.param({"active": None}, id="no active branch"),
        pytest.param({"active_metadata_error": "no hydrator.metadata"}, id="no metadata"),
    ],
)
def test_an_unreadable_environment_does_not_hide_a_later_one_that_would_move_backwards(
    unreadable: dict[str, Any],
) -> None:
    snapshot = build(
        promotable("dev", active=1, proposed=2),
        replace(Env("staging", active=1, proposed=2), **unreadable),
        Env("prod", active=5, proposed=5),
    )
    decision = decide(snapshot)
    reason = (
        f"would move backwards: {short(2)} is not a descendant of environment/prod's {short(5)}"
    )
    assert (decision.environments[0].state, decision.environments[0].reason) == (
        EnvState.BLOCKED,
        reason,
    )
    assert actions(decision, MergePullRequest) == []
    assert len(actions(decision, ClosePullRequest, 0)) == 1


def test_an_active_commit_that_names_no_dry_commit_is_an_error_and_never_healthy() -> None:
    snapshot = build(Env("dev", active=2, proposed=2))
    env = snapshot.environments[0]
    assert env.active is not None
    active = env.active.model_copy(update={"dry_sha": None})
    snapshot = snapshot.model_copy(
        update={"environments": (env.model_copy(update={"active": active}),)}
    )
    decision = decide(snapshot)
    assert decision.environments[0].state is EnvState.ERROR
    assert actions(decision, RecordHealthy) == []


def test_an_active_commit_with_unreadable_metadata_is_never_healthy_whatever_it_names() -> None:
    # The dry SHA a reader may still have found does not make a commit with unreadable
    # metadata healthy.
    snapshot = build(Env("dev", active=2, proposed=2))
    env = snapshot.environments[0]
    assert env.active is not None
    active = env.active.model_copy(update={"metadata_error": "no hydrator.metadata"})
    snapshot = snapshot.model_copy(
        update={"environments": (env.model_copy(update={"active": active}),)}
    )
    decision = decide(snapshot)
    assert decision.environments[0].state is EnvState.ERROR
    assert actions(decision, RecordHealthy) == []
