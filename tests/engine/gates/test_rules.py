"""Pins, blocked changes, notice periods and dependsOn, rule by rule."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from promoter.config import PromotionStrategy
from promoter.engine import MergePullRequest, SetCommitStatus, decide
from promoter.engine.core.actions import Announce, CommentPullRequest
from promoter.engine.core.ledger_state import Announcement, EnvLedger, Pin
from promoter.engine.core.snapshot import Rollout, Snapshot
from promoter.models import DryCommit, Phase
from tests.engine.strategies import NOW, dev_then_prod, dry

GREEN = {"ci": "success"}


def merged(snapshot: Snapshot) -> bool:
    return any(isinstance(a, MergePullRequest) for a in decide(snapshot).actions)


def statuses(snapshot: Snapshot) -> dict[str, SetCommitStatus]:
    return {a.status.key: a for a in decide(snapshot).actions if isinstance(a, SetCommitStatus)}


def test_a_pinned_environment_keeps_its_commit_and_says_why_on_the_pr() -> None:
    pinned = dev_then_prod(
        ledger=EnvLedger(pin=Pin(dry_sha=dry(1), reason="audit week", since=NOW))
    )
    assert not merged(pinned)
    check = statuses(pinned)["promoter/pin"].status
    assert check.phase is Phase.FAILURE and "pinned to" in check.description
    assert "audit week" in decide(pinned).environments[1].reason
    assert merged(dev_then_prod())


def test_a_blocked_change_waits_for_a_person_and_then_goes() -> None:
    commit = DryCommit(
        sha=dry(3), subject="Bump", author="ada", body="Bump\n\nPromote-Block: migrate values first"
    )
    blocked = dev_then_prod(
        changelog=(commit,), rollout=Rollout(tier="prod", block_trailer="Promote-Block")
    )
    assert not merged(blocked)
    reason = decide(blocked).environments[1].reason
    assert "migrate values first" in reason and "approve-change" in reason
    approved = blocked.model_copy(
        update={
            "environments": (
                blocked.environments[0],
                blocked.environments[1].model_copy(
                    update={"ledger": EnvLedger(approved_changes=(dry(3),))}
                ),
            )
        }
    )
    assert merged(approved)


def test_a_notice_period_announces_once_then_merges_after_the_lead() -> None:
    lead = 3600.0
    fresh = dev_then_prod(rollout=Rollout(tier="prod", notice_lead=lead))
    decision = decide(fresh)
    assert not merged(fresh)
    announced = [a for a in decision.actions if isinstance(a, Announce)]
    comments = [a for a in decision.actions if isinstance(a, CommentPullRequest)]
    assert len(announced) == 1 and announced[0].at == NOW
    assert "Upcoming change" in comments[0].body
    later = dev_then_prod(
        rollout=Rollout(tier="prod", notice_lead=lead),
        ledger=EnvLedger(
            announcements=(Announcement(dry_sha=dry(3), at=NOW - timedelta(minutes=10)),)
        ),
    )
    assert not merged(later)
    assert not any(isinstance(a, Announce) for a in decide(later).actions)
    check = statuses(later)["promoter/notice"].status
    assert check.phase is Phase.PENDING and "merges at" in check.description
    done = dev_then_prod(
        rollout=Rollout(tier="prod", notice_lead=lead),
        ledger=EnvLedger(
            announcements=(Announcement(dry_sha=dry(3), at=NOW - timedelta(hours=2)),)
        ),
    )
    assert merged(done)


def strategy(**spec: Any) -> PromotionStrategy:
    base = {"name": "s", "repository": "r", "environments": [{"branch": f"e/{n}"} for n in "abcd"]}
    return PromotionStrategy.model_validate({**base, **spec})


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"environments": [{"branch": "e/a"}, {"branch": "e/b", "dependsOn": ["e/zz"]}]},
            "not an environment",
        ),
        (
            {
                "environments": [
                    {"branch": "e/a", "dependsOn": ["e/b"]},
                    {"branch": "e/b", "dependsOn": ["e/a"]},
                ]
            },
            "cycle: e/a -> e/b -> e/a",
        ),
        ({"tiers": [{"name": "one", "environments": ["e/a", "e/b"]}]}, "not in a tier: e/c, e/d"),
        (
            {
                "tiers": [
                    {"name": "x", "environments": ["e/a", "e/b", "e/c", "e/d"], "require": "150%"}
                ]
            },
            "percentage",
        ),
        (
            {
                "tiers": [{"name": "x", "environments": ["e/a", "e/b", "e/c", "e/d"]}],
                "blockedChanges": {"fromTier": "y"},
            },
            "fromTier names no tier",
        ),
    ],
)
def test_a_rollout_that_cannot_work_is_refused_at_load_time(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        strategy(**spec)


def test_tiers_expand_to_upstream_groups_with_their_quorum() -> None:
    s = strategy(
        tiers=[
            {"name": "qa", "environments": ["e/a"]},
            {"name": "bronze", "environments": ["e/b", "e/c"], "require": "50%"},
            {"name": "gold", "environments": ["e/d"]},
        ]
    )
    graph = s.upstreams()
    assert graph["e/a"] == []
    assert [(g.branches, g.require) for g in graph["e/b"]] == [(("e/a",), 1)]
    assert [(g.branches, g.require) for g in graph["e/d"]] == [(("e/b", "e/c"), 1)]


def test_without_depends_on_the_list_is_a_line() -> None:
    graph = strategy().upstreams()
    assert [g.branches for g in graph["e/c"]] == [("e/b",)]
    assert graph["e/a"] == []


def test_a_blocking_label_on_the_pr_stops_it_until_its_change_is_approved() -> None:
    snapshot = dev_then_prod(
        rollout=Rollout(tier="prod", block_trailer="Promote-Block", block_label="hold-it")
    )
    pr = snapshot.environments[1].pull_request
    assert pr is not None and merged(snapshot)
    labelled = snapshot.environments[1].model_copy(
        update={"pull_request": pr.model_copy(update={"labels": ("hold-it",)})}
    )
    blocked = snapshot.model_copy(update={"environments": (snapshot.environments[0], labelled)})
    assert not merged(blocked)
    assert "label hold-it" in decide(blocked).environments[1].reason
    let_through = labelled.model_copy(update={"ledger": EnvLedger(approved_changes=(dry(3),))})
    assert merged(
        blocked.model_copy(update={"environments": (snapshot.environments[0], let_through)})
    )


def test_each_environment_of_a_tier_is_given_its_tier_settings_and_the_block_from_its_tier_on() -> (
    None
):
    from promoter.engine.core.dag import shape_of

    s = strategy(
        tiers=[
            {"name": "qa", "environments": ["e/a"]},
            {"name": "canary", "environments": ["e/b"], "notice": {"lead": "2h"}},
            {"name": "prod", "environments": ["e/c", "e/d"], "maxParallel": 1},
        ],
        blockedChanges={"fromTier": "canary", "label": "hold-back"},
    )
    shapes = shape_of(s)
    rollouts = [rollout for _, rollout in shapes]
    assert [r.tier for r in rollouts] == ["qa", "canary", "prod", "prod"]
    assert [r.tier_members for r in rollouts] == [(0,), (1,), (2, 3), (2, 3)]
    assert [r.max_parallel for r in rollouts] == [None, None, 1, 1]
    assert [r.notice_lead for r in rollouts] == [None, 7200.0, None, None]
    assert [r.block_trailer for r in rollouts] == [None] + ["Promote-Block"] * 3
    assert [r.block_label for r in rollouts] == [None, "hold-back", "hold-back", "hold-back"]
    assert all(groups is not None for groups, _ in shapes)  # tiers make it a graph


def test_a_line_without_tiers_or_dependencies_has_no_graph_but_one_with_dependencies_has() -> None:
    from promoter.engine.core.dag import shape_of

    assert all(groups is None for groups, _ in shape_of(strategy()))
    depends = strategy(
        environments=[
            {"branch": "e/a"},
            {"branch": "e/b", "dependsOn": ["e/a"]},
            {"branch": "e/c", "dependsOn": ["e/a"]},
        ]
    )
    shapes = shape_of(depends)
    assert all(groups is not None for groups, _ in shapes)
    assert [g.indices for g in shapes[1][0] or ()] == [(0,)]
