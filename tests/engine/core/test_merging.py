"""Every merge is built one way (``merging.merge_action``): a revert PR's merge is titled as a
revert whoever merges it (a reconcile or a person), a promotion's as a promotion, each
guarded on its head; a break-glass promotion re-reads no gate."""

from __future__ import annotations

import pytest

from promoter.engine import decide
from promoter.engine.core.actions import MergePullRequest
from promoter.engine.core.ledger_state import EnvLedger
from promoter.engine.core.merging import merge_action
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.operations import merge, promote
from promoter.models import PullRequest, PullRequestState

from ..reverts.test_revert import edit, kinds, revert_of, staging
from ..strategies import NOW, Env, build, dry, hydrated, short


def reverting(*, auto_merge: bool) -> Snapshot:
    """dev runs 5; its revert back to 3 waits as PR #99, open on the head the revert wrote."""
    record = revert_of("environment/dev", 5, 3, auto_merge=auto_merge)
    pr = PullRequest(
        id="99",
        number=99,
        head_branch=record.branch,
        base_branch="environment/dev",
        head_sha=record.revert_sha,
        state=PullRequestState.OPEN,
    )
    snapshot = build(Env("dev", active=5, proposed=5))
    return edit(snapshot, 0, ledger=EnvLedger(reverts=(record,)), revert_pull_request=pr)


def merges(actions: object) -> list[MergePullRequest]:
    assert isinstance(actions, list | tuple)
    return [a for a in actions if isinstance(a, MergePullRequest)]


def title(action: MergePullRequest) -> str:
    return action.message.partition("\n\n")[0]


REVERT_TITLE = f"Revert environment/dev to {short(3)} (#99)"


def test_a_revert_merged_by_a_person_is_titled_as_a_revert_not_as_a_promotion() -> None:
    [by_hand] = merges(merge(reverting(auto_merge=False), 0, by="ada"))
    assert title(by_hand) == REVERT_TITLE
    assert by_hand.message.endswith(f"reverts {short(5)}.\nAsked for by ada.\n")


def test_a_revert_carries_the_same_merge_whoever_merges_it_but_for_who_asked() -> None:
    [automatic] = merges(decide(reverting(auto_merge=True)).actions)
    [by_hand] = merges(merge(reverting(auto_merge=True), 0))
    [named] = merges(merge(reverting(auto_merge=True), 0, by="ada"))
    assert automatic == by_hand
    assert named == automatic.model_copy(
        update={"message": automatic.message + "\nAsked for by ada.\n"}
    )
    assert (title(automatic), automatic.purpose, automatic.dry_sha) == (
        REVERT_TITLE,
        "revert",
        dry(3),
    )
    assert (automatic.expected_head_sha, automatic.required_keys) == ("f" * 40, ())


def test_a_revert_merge_is_titled_as_a_revert_not_as_a_promotion() -> None:
    record = revert_of("environment/staging", 5, 3)
    pr = PullRequest(
        id="99",
        number=99,
        head_branch=record.branch,
        base_branch="environment/staging",
        head_sha=record.revert_sha,
        state=PullRequestState.OPEN,
    )
    snapshot = edit(staging(reverts=(record,)), 1, revert_pull_request=pr)
    [automatic] = kinds(snapshot, MergePullRequest)
    heading, _, body = automatic.message.partition("\n\n")
    assert heading == f"Revert environment/staging to {dry(3)[:7]} (#99)"
    assert not heading.startswith("Promote")
    assert f"reverts {dry(5)[:7]}" in body


def test_a_promotion_merged_automatically_by_a_person_or_past_the_gates_is_titled_alike() -> None:
    ready = build(
        Env(
            "dev",
            active=2,
            proposed=3,
            proposed_keys=("ci",),
            proposed_statuses={"ci": "success"},
            pr="current",
        )
    )
    [automatic] = merges(decide(ready).actions)
    [by_hand] = merges(merge(ready, 0))
    [glass] = merges(promote(ready, 0, reason="hotfix", now=NOW, by="ada"))
    assert automatic == by_hand
    assert {title(m) for m in (automatic, by_hand, glass)} == {
        f"Promote {short(3)} to environment/dev (#10)"
    }
    head = hydrated("environment/dev-next", 3)
    assert (automatic.expected_head_sha, automatic.required_keys) == (head, ("ci",))
    assert (glass.expected_head_sha, glass.required_keys, glass.purpose) == (head, (), "override")


def test_a_revert_is_never_merged_as_a_break_glass_promotion() -> None:
    record = revert_of("environment/dev", 5, 3)
    with pytest.raises(ValueError, match="never merged as a break-glass"):
        merge_action(reverting(auto_merge=True), 0, 99, revert=record, override=True)
