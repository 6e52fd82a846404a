"""Examples of the promotion rules of DESIGN.md §3 that ``decide`` holds itself (1, 2, 6 and
7), and of the reasons the engine gives. The gates' rules (3 to 5) are in ``gates/``,
rule 8 in ``reverts/``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from promoter.engine import (
    GATES_KEY,
    ClosePullRequest,
    Decision,
    EnvState,
    MergePullRequest,
    OpenPullRequest,
    RecordHealthy,
    SetCommitStatus,
    UpdatePullRequest,
    decide,
)
from promoter.engine.core.actions import Action
from promoter.models import Phase

from .strategies import STATUS_URL, Env, build, dry, hydrated, pull_request, short

GREEN = {"ci": "success"}


def actions(decision: Decision, kind: type[Action], environment: int | None = None) -> list[Action]:
    """The actions of one kind, for one environment when ``environment`` is given."""
    return [
        a
        for a in decision.actions
        if isinstance(a, kind) and environment in (None, getattr(a, "environment", None))
    ]


def only(decision: Decision, kind: type[Action], environment: int | None = None) -> Action:
    found = actions(decision, kind, environment)
    assert len(found) == 1, decision.actions
    return found[0]


def promotable(name: str = "dev", **changes: Any) -> Env:
    """An environment on 1 with 3 proposed, ci green, an open PR on the proposed tip."""
    env = Env(name, active=1, proposed=3, proposed_keys=("ci",), proposed_statuses=GREEN)
    return replace(env, **{"pr": "current", **changes})


# --- rule 1: nothing to promote ---------------------------------------------------------


def test_an_environment_whose_proposed_dry_sha_is_active_is_up_to_date() -> None:
    decision = decide(build(Env("dev", active=2, proposed=2)))
    verdict = decision.environments[0]
    assert verdict.state is EnvState.UP_TO_DATE
    assert verdict.reason == f"environment/dev is up to date on {short(2)}"
    assert actions(decision, OpenPullRequest, 0) == []


def test_a_pull_request_left_open_on_an_up_to_date_environment_is_closed() -> None:
    snapshot = build(Env("dev", active=2, proposed=2, pr="current"))
    close = only(decide(snapshot), ClosePullRequest, 0)
    assert isinstance(close, ClosePullRequest)
    assert close.number == pull_request(snapshot, 0).number
    assert close.comment.startswith("Nothing to promote: environment/dev is already on")


def test_a_descendant_rendered_to_the_same_tree_is_nothing_to_promote() -> None:
    decision = decide(build(Env("dev", active=1, proposed=3, same_tree=True, pr="current")))
    verdict = decision.environments[0]
    assert verdict.state is EnvState.UP_TO_DATE
    assert verdict.reason == (
        f"nothing to promote: {short(3)} renders the same manifests as {short(1)}"
    )
    close = only(decision, ClosePullRequest, 0)
    assert isinstance(close, ClosePullRequest)
    assert close.comment.startswith("Nothing to promote:")


def test_a_no_op_environment_counts_as_on_its_proposed_commit_for_the_next_one() -> None:
    snapshot = build(
        Env("dev", active=1, proposed=3, same_tree=True),
        promotable("staging", active=1, proposed=3),
    )
    decision = decide(snapshot)
    assert decision.environments[1].state is EnvState.PROMOTING
    merge = only(decision, MergePullRequest, 1)
    assert isinstance(merge, MergePullRequest) and merge.expected_head_sha == hydrated(
        "environment/staging-next", 3
    )


def test_the_same_tree_on_an_older_commit_is_not_a_no_op_but_a_move_backwards() -> None:
    verdict = decide(build(Env("dev", active=3, proposed=1, same_tree=True))).environments[0]
    assert verdict.state is EnvState.BLOCKED
    assert verdict.reason.startswith("would move backwards")


def test_a_missing_proposed_branch_waits_without_a_pull_request() -> None:
    decision = decide(build(Env("dev", active=1, proposed=None)))
    verdict = decision.environments[0]
    assert verdict.state is EnvState.WAITING
    assert verdict.reason == "waiting for the hydrator to push environment/dev-next"
    assert actions(decision, OpenPullRequest, 0) == []


def test_an_environment_error_is_reported_and_blocks_the_next_environment() -> None:
    snapshot = build(
        Env("dev", active=3, proposed=3, error="git fetch failed"),
        promotable("staging"),
    )
    decision = decide(snapshot)
    assert decision.environments[0].state is EnvState.ERROR
    assert decision.environments[0].reason == "git fetch failed"
    staging = decision.environments[1]
    assert staging.state is EnvState.BLOCKED
    assert staging.reason == "previous environment environment/dev has an error"
    assert actions(decision, MergePullRequest) == []


@pytest.mark.parametrize("side", ["active", "proposed"])
def test_unreadable_hydrator_metadata_on_either_branch_is_an_error(side: str) -> None:
    env = promotable(**{f"{side}_metadata_error": "no hydrator.metadata on 5d2c1b0"})
    decision = decide(build(env))
    assert decision.environments[0].state is EnvState.ERROR
    assert decision.environments[0].reason == "no hydrator.metadata on 5d2c1b0"
    assert [a for a in decision.actions if not isinstance(a, RecordHealthy)] == []


def test_a_missing_active_branch_is_an_error() -> None:
    verdict = decide(build(Env("dev", active=None, proposed=2))).environments[0]
    assert verdict.state is EnvState.ERROR
    assert verdict.reason == "the active branch environment/dev does not exist"


# --- rule 2: never backwards ------------------------------------------------------------


def test_a_proposed_commit_older_than_the_active_one_is_blocked_and_its_pr_closed() -> None:
    decision = decide(build(promotable(active=4, proposed=2)))
    verdict = decision.environments[0]
    reason = f"would move backwards: {short(2)} is not a descendant of environment/dev's {short(4)}"
    assert (verdict.state, verdict.reason) == (EnvState.BLOCKED, reason)
    close = only(decision, ClosePullRequest, 0)
    assert isinstance(close, ClosePullRequest)
    assert close.comment == f"W{reason[1:]}. The promoter closed this pull request."
    assert actions(decision, MergePullRequest) == []


def test_a_proposed_commit_older_than_a_later_environment_is_blocked() -> None:
    snapshot = build(promotable("dev", active=1, proposed=2), Env("prod", active=5, proposed=5))
    verdict = decide(snapshot).environments[0]
    assert verdict.reason == (
        f"would move backwards: {short(2)} is not a descendant of environment/prod's {short(5)}"
    )


def test_a_proposed_commit_unknown_to_the_history_never_gets_a_pull_request() -> None:
    decision = decide(build(promotable(pr="none", proposed=1000)))
    assert decision.environments[0].state is EnvState.BLOCKED
    assert actions(decision, OpenPullRequest) == []


# --- rule 6: pull request and merge -----------------------------------------------------


def test_a_promotion_without_a_pr_opens_one_and_comes_back_at_once_to_merge_it() -> None:
    decision = decide(build(promotable(pr="none")))
    opened = only(decision, OpenPullRequest, 0)
    assert isinstance(opened, OpenPullRequest)
    assert (opened.head, opened.base) == ("environment/dev-next", "environment/dev")
    assert opened.title == f"Promote {short(3)} to environment/dev"
    assert opened.labels == ()  # none configured: on GitHub, no labelling call
    assert decision.environments[0].state is EnvState.READY
    assert actions(decision, MergePullRequest) == []
    assert decision.requeue_after == 0.0


def test_a_pr_opened_while_a_gate_is_pending_needs_no_early_requeue() -> None:
    decision = decide(build(promotable(pr="none", proposed_statuses={})))
    assert len(actions(decision, OpenPullRequest, 0)) == 1
    assert decision.requeue_after is None


def test_a_closed_pr_is_replaced_by_a_new_one() -> None:
    assert len(actions(decide(build(promotable(pr="closed"))), OpenPullRequest, 0)) == 1


def test_an_open_pr_on_the_proposed_tip_is_merged_with_its_head_as_guard() -> None:
    snapshot = build(
        promotable(proposed_keys=("ci", "e2e"), proposed_statuses=GREEN | {"e2e": "success"})
    )
    decision = decide(snapshot)
    merge = only(decision, MergePullRequest, 0)
    assert merge == MergePullRequest(
        environment=0,
        number=pull_request(snapshot, 0).number,
        expected_head_sha=hydrated("environment/dev-next", 3),
        dry_sha=dry(3),
        message=f"Promote {short(3)} to environment/dev (#10)\n\nMerged by promoter for demo.",
        required_keys=("ci", "e2e"),
    )
    verdict = decision.environments[0]
    assert (verdict.state, verdict.reason) == (
        EnvState.PROMOTING,
        f"merging pull request #10 to promote {short(3)}",
    )
    assert actions(decision, OpenPullRequest) + actions(decision, UpdatePullRequest) == []


def test_a_pr_whose_head_is_stale_is_not_merged_and_looked_at_again_soon() -> None:
    decision = decide(build(promotable(pr="stale")))
    assert actions(decision, MergePullRequest) == []
    verdict = decision.environments[0]
    assert verdict.state is EnvState.BLOCKED
    assert "is stale" in verdict.reason
    assert decision.requeue_after == 1.0


def test_without_auto_merge_a_ready_pr_waits_for_a_person() -> None:
    decision = decide(build(promotable(auto_merge=False)))
    assert actions(decision, MergePullRequest) == []
    verdict = decision.environments[0]
    assert (verdict.state, verdict.reason) == (
        EnvState.READY,
        "every gate passes; waiting for a person to merge",
    )


def summary(decision: Decision, environment: int) -> list[SetCommitStatus]:
    """The ``promoter/gates`` summary checks the decision writes for one environment."""
    found = actions(decision, SetCommitStatus, environment)
    return [a for a in found if isinstance(a, SetCommitStatus) and a.status.key == GATES_KEY]


def test_without_auto_merge_the_summary_check_says_what_the_pr_waits_for() -> None:
    waiting = decide(build(promotable(auto_merge=False, proposed_statuses={})))
    [check] = summary(waiting, 0)
    assert check.sha == hydrated("environment/dev-next", 3)
    assert (check.status.phase, check.status.description) == (
        Phase.PENDING,
        "waiting until these pass: ci",
    )
    assert check.status.url == STATUS_URL

    ready = decide(build(promotable(auto_merge=False)))
    [check] = summary(ready, 0)
    assert (check.status.phase, check.status.description) == (
        Phase.SUCCESS,
        "every gate passes: ci; waiting for a person to merge",
    )


def test_the_summary_leaves_out_a_gate_that_folds_in_the_promoters_own_statuses() -> None:
    # GitLab: the pipeline gate waits for every commit status, the summary's included
    snapshot = build(promotable(auto_merge=False, proposed_statuses={}))
    snapshot = snapshot.model_copy(update={"folded_keys": frozenset({"ci"})})
    [check] = summary(decide(snapshot), 0)
    assert (check.status.phase, check.status.description) == (
        Phase.SUCCESS,
        "no promoter gates to wait for; waiting for a person to merge",
    )
    assert decide(snapshot).environments[0].state is EnvState.BLOCKED  # ci still counts


def test_the_summary_names_failed_gates_before_pending_ones() -> None:
    env = promotable(auto_merge=False, proposed_keys=("ci", "e2e", "lint"))
    decision = decide(build(replace(env, proposed_statuses={"e2e": "failure"})))
    [check] = summary(decision, 0)
    assert (check.status.phase, check.status.description) == (
        Phase.FAILURE,
        "failed: e2e; waiting until these pass: ci, lint",
    )


def test_the_pending_summary_keeps_its_text_as_gates_pass_one_by_one() -> None:
    """A rewrite is an SCM call: one text for the whole pending phase."""
    env = promotable(auto_merge=False, proposed_keys=("ci", "lint"))
    texts = {
        check.status.description
        for statuses in ({}, {"ci": "success"}, {"lint": "success"})
        for check in summary(decide(build(replace(env, proposed_statuses=statuses))), 0)
    }
    assert texts == {"waiting until these pass: ci, lint"}


def test_with_auto_merge_no_summary_is_written_when_every_gate_has_its_own_check() -> None:
    for env in (promotable(), promotable(proposed_statuses={}), promotable(pr=None)):
        assert summary(decide(build(env)), 0) == []


def test_a_summary_already_on_the_head_is_kept_up_to_date() -> None:
    stale = {"ci": "success", GATES_KEY: "pending"}
    decision = decide(build(promotable(proposed_statuses=stale)))
    [check] = summary(decision, 0)
    assert check.status.phase is Phase.SUCCESS
    assert check.status.description == "every gate passes: ci"
    assert len(actions(decision, MergePullRequest, 0)) == 1


def test_a_draft_pr_is_not_merged() -> None:
    decision = decide(build(promotable(pr="draft")))
    assert actions(decision, MergePullRequest) == []
    assert decision.environments[0].reason == "pull request #10 is a draft"


def test_a_pr_with_an_outdated_title_and_body_is_updated_and_still_merged() -> None:
    snapshot = build(promotable(pr="outdated"))
    decision = decide(snapshot)
    update = only(decision, UpdatePullRequest, 0)
    assert isinstance(update, UpdatePullRequest)
    assert update.title == f"Promote {short(3)} to environment/dev"
    assert "<!-- promoter:metadata" in update.body
    assert len(actions(decision, MergePullRequest, 0)) == 1


def test_the_strategys_labels_go_on_the_promotion_pr() -> None:
    snapshot = build(promotable(pr="none")).model_copy(update={"labels": ("promotion", "dev")})
    opened = only(decide(snapshot), OpenPullRequest, 0)
    assert isinstance(opened, OpenPullRequest)
    assert opened.labels == ("promotion", "dev")


def test_labels_people_added_are_kept_when_the_promotion_labels_are_restored() -> None:
    snapshot = build(promotable()).model_copy(update={"labels": ("promotion", "dev")})
    env = snapshot.environments[0]
    pr = pull_request(snapshot, 0).model_copy(update={"labels": ("do-not-merge",)})
    envs = (env.model_copy(update={"pull_request": pr}),)
    update = only(decide(snapshot.model_copy(update={"environments": envs})), UpdatePullRequest, 0)
    assert isinstance(update, UpdatePullRequest)
    assert update.labels == ("do-not-merge", "promotion", "dev")


def test_a_body_rewritten_with_crlf_line_endings_is_not_updated() -> None:
    snapshot = build(promotable())
    env = snapshot.environments[0]
    pr = pull_request(snapshot, 0)
    pr = pr.model_copy(update={"body": pr.body.replace("\n", "\r\n")})
    envs = (env.model_copy(update={"pull_request": pr}),)
    assert (
        actions(decide(snapshot.model_copy(update={"environments": envs})), UpdatePullRequest) == []
    )


def test_one_pass_never_promotes_a_commit_through_two_environments() -> None:
    snapshot = build(
        promotable("dev", active=1, proposed=3), promotable("staging", active=1, proposed=3)
    )
    decision = decide(snapshot)
    assert [getattr(m, "environment", None) for m in actions(decision, MergePullRequest)] == [0]
    assert decision.environments[1].reason == f"environment/dev is not on {short(3)} yet"


def test_several_requeues_collapse_into_the_soonest() -> None:
    snapshot = build(
        promotable("dev", active=3, proposed=5, pr="stale"),  # asks for 1 s
        promotable("qa", active=1, proposed=3, pr="none"),  # asks for 0 s
    )
    assert decide(snapshot).requeue_after == 0.0


# --- rule 7: healthy --------------------------------------------------------------------


def test_an_environment_with_no_active_gates_is_recorded_healthy() -> None:
    snapshot = build(Env("dev", active=2, proposed=2))
    record = only(decide(snapshot), RecordHealthy, 0)
    assert record == RecordHealthy(
        environment=0,
        dry_sha=dry(2),
        hydrated_sha=hydrated("environment/dev", 2),
        since=snapshot.now,
    )


def test_an_environment_is_not_healthy_while_an_active_gate_is_not_success() -> None:
    env = Env(
        "dev",
        active=2,
        proposed=2,
        active_keys=("health", "ci"),
        active_statuses={"health": "success", "ci": "pending"},
    )
    assert actions(decide(build(env)), RecordHealthy) == []


def test_a_healthy_commit_already_recorded_is_not_recorded_again() -> None:
    assert actions(decide(build(Env("dev", active=2, proposed=2, healthy=2))), RecordHealthy) == []


def test_a_new_healthy_commit_replaces_the_last_one() -> None:
    assert (
        len(actions(decide(build(Env("dev", active=2, proposed=2, healthy=1))), RecordHealthy, 0))
        == 1
    )
