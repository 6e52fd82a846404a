"""The operations a person asks for, decided on a snapshot: what each refuses, and why."""

from __future__ import annotations

from promoter.engine.core.actions import (
    ApproveChange,
    ApprovePullRequest,
    HoldDryCommit,
    MergePullRequest,
    PinEnvironment,
)
from promoter.engine.core.snapshot import Rollout, Snapshot
from promoter.engine.decide import backwards_reason
from promoter.engine.operations import (
    Refusal,
    approve,
    approve_change,
    full_dry_sha,
    hold,
    merge,
    pin,
)

from .strategies import NOW, Env, build, dry


def blocking(snapshot: Snapshot, *indexes: int) -> Snapshot:
    """``snapshot`` with the environments at ``indexes`` holding back trailered commits."""
    environments = tuple(
        env.model_copy(update={"rollout": Rollout(tier="prod", block_trailer="Promote-Block")})
        if i in indexes
        else env
        for i, env in enumerate(snapshot.environments)
    )
    return snapshot.model_copy(update={"environments": environments})


def three() -> Snapshot:
    return build(Env("dev", active=3, proposed=3), Env("staging"), Env("prod"))


def test_a_pin_without_a_reason_is_refused_as_unprocessable() -> None:
    for reason in ("", "   "):
        assert pin(three(), 2, dry_sha=dry(0), reason=reason, now=NOW) == Refusal(
            reason="a pin needs a reason", status=422
        )


def test_a_pin_names_the_full_dry_sha_its_reason_and_when() -> None:
    assert pin(three(), 2, dry_sha=dry(3)[:7], reason="audit", now=NOW) == [
        PinEnvironment(environment=2, dry_sha=dry(3), reason="audit", since=NOW)
    ]


def test_approving_a_change_nobody_knows_is_refused_as_unprocessable() -> None:
    refusal = approve_change(blocking(three(), 2), dry_sha="f00")
    assert refusal == Refusal(
        reason="f00 does not name one known dry commit; give the full SHA", status=422
    )


def test_approving_a_change_where_no_environment_blocks_one_is_refused() -> None:
    assert approve_change(three(), dry_sha=dry(3)) == Refusal(
        reason="demo blocks no changes (no blockedChanges)", status=409
    )


def test_approving_a_change_lets_it_through_each_environment_that_blocks_it() -> None:
    assert approve_change(blocking(three(), 1, 2), dry_sha=dry(3)[:9]) == [
        ApproveChange(environment=1, dry_sha=dry(3)),
        ApproveChange(environment=2, dry_sha=dry(3)),
    ]


# --- what each operation refuses, with the status the API answers ------------------------


def waiting() -> Snapshot:
    """dev runs 2 and proposes 3 through PR #10, whose gate ``ci`` is pending."""
    return build(
        Env("dev", active=2, proposed=3, proposed_keys=("ci",), pr="current"),
        Env("staging", active=2, proposed=2),
    )


def test_an_approval_needs_a_user_and_an_open_pull_request() -> None:
    assert approve(waiting(), 0, user="  ") == Refusal(
        reason="an approval needs a user", status=422
    )
    assert approve(waiting(), 1, user="ada") == Refusal(
        reason="environment/staging has no open pull request to approve", status=409
    )
    assert approve(waiting(), 0, user=" ada ") == [
        ApprovePullRequest(environment=0, number=10, user="ada")
    ]


def test_a_hold_needs_a_reason_and_something_to_hold() -> None:
    assert hold(waiting(), 0, dry_sha=None, reason=" ", now=NOW, by="ada") == Refusal(
        reason="a hold needs a reason", status=422
    )
    nothing = build(Env("dev", active=2, proposed=None))
    assert hold(nothing, 0, dry_sha=None, reason="bad", now=NOW, by="ada") == Refusal(
        reason="nothing is proposed for environment/dev; give --dry-sha", status=422
    )
    assert hold(waiting(), 0, dry_sha=None, reason="bad", now=NOW, by="ada") == [
        HoldDryCommit(environment=i, dry_sha=dry(3), reason="held by ada: bad", since=NOW)
        for i in (0, 1)
    ]


def test_a_full_sha_nobody_knows_is_taken_as_given_and_a_prefix_only_when_known() -> None:
    unknown = "f" * 40
    assert full_dry_sha(waiting(), unknown.upper()) == unknown
    assert full_dry_sha(waiting(), dry(2)[:8]) == dry(2)  # the active one
    assert full_dry_sha(waiting(), unknown[:39]) == Refusal(
        reason=f"{unknown[:39]} does not name one known dry commit; give the full SHA",
        status=422,
    )


def test_a_merge_is_refused_while_a_gate_waits_and_says_which_and_the_way_past_it() -> None:
    refusal = merge(waiting(), 0, by="ada")
    assert isinstance(refusal, Refusal) and refusal.status == 409
    assert refusal.reason.startswith("not every gate passes: ")
    assert refusal.reason.endswith(" (promoter promote merges past them, kept in the ledger)")
    assert "ci" in refusal.reason


def test_a_merge_names_who_asked_and_guards_on_the_head_and_the_gates_seen() -> None:
    green = build(
        Env(
            "dev",
            active=2,
            proposed=3,
            proposed_keys=("ci", "ci"),
            proposed_statuses={"ci": "success"},
            pr="current",
        )
    )
    [action] = merge(green, 0, by="ada")  # type: ignore[misc]
    assert isinstance(action, MergePullRequest)
    assert action.message.endswith("\nAsked for by ada.\n")
    assert action.required_keys == ("ci",)
    assert action.expected_head_sha == green.environments[0].proposed.hydrated_sha  # type: ignore[union-attr]
    [anonymous] = merge(green, 0)  # type: ignore[misc]
    assert isinstance(anonymous, MergePullRequest)
    assert "Asked for by" not in anonymous.message and not anonymous.message.endswith("\n\n")


def test_a_merge_of_a_pull_request_behind_its_branch_or_an_unreadable_one_is_refused() -> None:
    behind = build(Env("dev", active=2, proposed=3, pr="stale"))
    assert merge(behind, 0) == Refusal(
        reason="pull request #10 is behind environment/dev-next; try again", status=409
    )
    broken = build(Env("dev", active=2, proposed=3, pr="current", error="the mirror is gone"))
    refusal = merge(broken, 0)
    assert isinstance(refusal, Refusal) and "the mirror is gone" in refusal.reason
    backwards = build(Env("dev", active=5, proposed=3, pr="current"))
    refusal = merge(backwards, 0)
    assert isinstance(refusal, Refusal) and refusal.reason
    assert refusal.reason == backwards_reason(backwards, 0, dry(3))
