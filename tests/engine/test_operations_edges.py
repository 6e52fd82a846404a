"""The edges of the operations a person asks for: each refusal of a break-glass promotion,
a merge, a release and an unpin, word for word with its status, and the exact actions
when one goes through (a break-glass merge is an ``override``, an unpin names its
environment, a prefix finds a dry commit known only as active or only as proposed)."""

from __future__ import annotations

from promoter.engine.core.actions import (
    CommentPullRequest,
    MergePullRequest,
    PinEnvironment,
    RecordOverride,
    ReleaseHold,
    ResumeEnvironment,
)
from promoter.engine.core.ledger_state import EnvLedger, Hold, Pin
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.decide import backwards_reason
from promoter.engine.operations import Refusal, full_dry_sha, merge, promote, release, unpin
from promoter.models import PullRequest, PullRequestState

from .reverts.test_revert import edit, revert_of
from .strategies import NOW, Env, build, dry, hydrated, short


def ready() -> Snapshot:
    """dev runs 2 and proposes 3 through PR #10, open on the proposed tip, no gates."""
    return build(Env("dev", active=2, proposed=3, pr="current"))


# --- full_dry_sha ------------------------------------------------------------------------


def test_a_prefix_finds_a_dry_commit_known_only_as_an_environments_active_one() -> None:
    snapshot = build(Env("dev", active=2, proposed=3))
    assert full_dry_sha(snapshot, dry(2)[:8]) == dry(2)


def test_a_prefix_finds_a_dry_commit_known_only_as_an_environments_proposed_one() -> None:
    snapshot = build(Env("dev", active=2, proposed=3))
    assert full_dry_sha(snapshot, dry(3)[:8].upper()) == dry(3)


# --- promote: each refusal, word for word ---------------------------------------------------


def test_a_break_glass_promotion_without_a_reason_is_refused_as_unprocessable() -> None:
    for reason in ("", "  "):
        assert promote(ready(), 0, reason=reason, now=NOW, by="ada") == Refusal(
            reason="a break-glass promotion needs a reason", status=422
        )


def test_a_break_glass_promotion_of_an_unreadable_environment_is_refused_with_why() -> None:
    broken = build(Env("dev", active=2, proposed=3, pr="current", error="the mirror is gone"))
    assert promote(broken, 0, reason="hotfix", now=NOW, by="ada") == Refusal(
        reason="the mirror is gone", status=409
    )


def test_a_break_glass_promotion_with_nothing_proposed_is_refused() -> None:
    nothing = build(Env("dev", active=2, proposed=None))
    assert promote(nothing, 0, reason="hotfix", now=NOW, by="ada") == Refusal(
        reason="nothing is proposed for environment/dev", status=409
    )


def test_a_break_glass_promotion_never_moves_an_environment_backwards() -> None:
    backwards = build(Env("dev", active=5, proposed=3, pr="current"))
    expected = backwards_reason(backwards, 0, dry(3))
    assert expected is not None
    assert promote(backwards, 0, reason="hotfix", now=NOW, by="ada") == Refusal(
        reason=expected, status=409
    )


def test_a_break_glass_promotion_of_a_pull_request_behind_its_branch_is_refused() -> None:
    behind = build(Env("dev", active=2, proposed=3, pr="stale"))
    assert promote(behind, 0, reason="hotfix", now=NOW, by="ada") == Refusal(
        reason="pull request #10 is behind environment/dev-next; try again", status=409
    )


def test_a_break_glass_promotion_comments_merges_as_an_override_and_records_it() -> None:
    snapshot = ready()
    head = hydrated("environment/dev-next", 3)
    assert promote(snapshot, 0, reason="hotfix", now=NOW, by="ada") == [
        CommentPullRequest(
            environment=0,
            number=10,
            body="Break-glass promotion past the gates by ada: hotfix",
        ),
        MergePullRequest(
            environment=0,
            number=10,
            expected_head_sha=head,
            dry_sha=dry(3),
            message=f"Promote {short(3)} to environment/dev (#10)\n\nMerged by promoter for demo.",
            purpose="override",
        ),
        RecordOverride(environment=0, dry_sha=dry(3), reason="hotfix", at=NOW),
    ]


# --- merge ------------------------------------------------------------------------------


def test_a_merge_nobody_is_named_for_carries_exactly_the_promotion_message() -> None:
    green = build(
        Env(
            "dev",
            active=2,
            proposed=3,
            proposed_keys=("ci",),
            proposed_statuses={"ci": "success"},
            pr="current",
        )
    )
    actions = merge(green, 0)
    assert isinstance(actions, list)
    [action] = actions
    assert isinstance(action, MergePullRequest)
    assert action.message == (
        f"Promote {short(3)} to environment/dev (#10)\n\nMerged by promoter for demo."
    )


def test_a_merge_refused_for_gates_names_each_waiting_gate_separated_by_semicolons() -> None:
    waiting = build(Env("dev", active=2, proposed=3, proposed_keys=("ci", "e2e"), pr="current"))
    head = hydrated("environment/dev-next", 3)[:7]

    def wait(key: str) -> str:
        return (
            f"waiting for {key}: report it on {head},"
            f" the head of environment/dev-next (dry {short(3)})"
        )

    assert merge(waiting, 0) == Refusal(
        reason=f"not every gate passes: {wait('ci')}; {wait('e2e')}"
        " (promoter promote merges past them, kept in the ledger)",
        status=409,
    )


def reverting(head_sha: str) -> Snapshot:
    """dev runs 5, its ledger records a revert to 3 (PR #99), whose PR is open on ``head_sha``."""
    record = revert_of("environment/dev", 5, 3)
    pr = PullRequest(
        id="99",
        number=99,
        head_branch=record.branch,
        base_branch="environment/dev",
        head_sha=head_sha,
        state=PullRequestState.OPEN,
    )
    snapshot = build(Env("dev", active=5, proposed=5))
    return edit(snapshot, 0, ledger=EnvLedger(reverts=(record,)), revert_pull_request=pr)


def test_a_merge_of_a_revert_pull_request_whose_head_moved_is_refused() -> None:
    assert merge(reverting("e" * 40), 0, by="ada") == Refusal(
        reason="revert PR #99 moved; look at it again", status=409
    )


def test_a_merge_of_a_revert_pull_request_on_its_recorded_head_merges_it_as_a_revert() -> None:
    assert merge(reverting("f" * 40), 0, by="ada") == [
        MergePullRequest(
            environment=0,
            number=99,
            expected_head_sha="f" * 40,
            dry_sha=dry(3),
            message=f"Revert environment/dev to {short(3)} (#99)\n\n"
            f"Merged by promoter for demo: reverts {short(5)}.\nAsked for by ada.\n",
            purpose="revert",
        )
    ]


# --- release ----------------------------------------------------------------------------


def revert_hold(position: int) -> Hold:
    return Hold(dry_sha=dry(position), reason="reverted", since=NOW, source="revert")


def test_a_release_without_the_admin_role_names_the_environment_whose_revert_set_the_hold() -> None:
    snapshot = build(Env("dev", active=3, proposed=3), Env("staging", active=2, proposed=3))
    snapshot = edit(snapshot, 1, ledger=EnvLedger(holds=(revert_hold(3),)))
    assert release(snapshot, 0, dry_sha=dry(3), now=NOW, by="bob", revert_holds=False) == Refusal(
        reason=f"the hold on {short(3)} in environment/staging was set by a revert;"
        " releasing it needs the admin role",
        status=403,
    )
    assert release(snapshot, 0, dry_sha=dry(3), now=NOW, by="root") == [
        ReleaseHold(environment=1, dry_sha=dry(3), reason="released by root"),
        ResumeEnvironment(environment=0, at=NOW),
    ]


# --- unpin ------------------------------------------------------------------------------


def test_unpinning_an_environment_that_is_not_pinned_is_refused() -> None:
    snapshot = build(Env("dev", active=3, proposed=3), Env("staging", active=2, proposed=3))
    assert unpin(snapshot, 1) == Refusal(reason="environment/staging is not pinned", status=409)


def test_unpinning_a_pinned_environment_lifts_the_pin_of_that_environment() -> None:
    snapshot = build(Env("dev", active=3, proposed=3), Env("staging", active=2, proposed=3))
    pin = Pin(dry_sha=dry(2), reason="audit", since=NOW)
    snapshot = edit(snapshot, 1, ledger=EnvLedger(pin=pin))
    assert unpin(snapshot, 1) == [PinEnvironment(environment=1, dry_sha=None)]


def test_a_merge_without_an_open_pull_request_is_refused_in_words() -> None:
    nothing = build(Env("dev", active=2, proposed=3))
    assert merge(nothing, 0, by="ada") == Refusal(
        reason="environment/dev has no open pull request to merge"
    )


def test_a_break_glass_promotion_of_what_already_runs_is_refused_in_words() -> None:
    running = build(Env("dev", active=3, proposed=3))
    assert promote(running, 0, reason="hotfix", now=NOW, by="ada") == Refusal(
        reason=f"environment/dev already runs {dry(3)[:7]}"
    )
