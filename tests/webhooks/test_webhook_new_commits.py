"""A push webhook announcing a commit pushed for the first time: its statuses come by webhook.

Such a commit starts complete and empty in the status cache, so the reconcile it wakes
spends no SCM read on it; statuses that webhooks bring are merged in. A commit pushed
before, or one a strategy already read, is read from the SCM as usual.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from promoter.models import CommitStatus, Phase
from tests.webhooks.helpers import Hooks, github_fixture, gitlab_fixture, running_hooks

NEW = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"
"""``after`` and ``head_commit.id`` of GitHub's genuine push payload."""


def github_push(distinct: bool) -> dict[str, Any]:
    push = github_fixture("push/with-new-branch.payload.json")
    push["ref"] = "refs/heads/environment/dev-next"
    push["head_commit"] = push["head_commit"] | {"distinct": distinct}
    return push


def test_a_commit_github_says_is_new_needs_no_read(hooks: Hooks) -> None:
    assert hooks.github("push", github_push(distinct=True)).status_code == 202

    assert hooks.cache.get("hello", NEW) == []


def test_a_status_that_came_first_is_kept_when_the_push_is_announced(hooks: Hooks) -> None:
    early = CommitStatus(key="ci", phase=Phase.SUCCESS, updated_at=datetime(2026, 1, 1, tzinfo=UTC))
    hooks.cache.put("hello", NEW, early)

    hooks.github("push", github_push(distinct=True))

    assert [(s.key, s.phase) for s in hooks.cache.get("hello", NEW) or []] == [
        ("ci", Phase.SUCCESS)
    ]


def test_a_commit_pushed_before_is_read_from_the_scm(hooks: Hooks) -> None:
    hooks.github("push", github_push(distinct=False))

    assert hooks.cache.get("hello", NEW) is None


def test_a_commit_a_strategy_has_read_is_read_again(hooks: Hooks) -> None:
    hooks.shas.track("hello-app", [NEW])

    hooks.github("push", github_push(distinct=True))

    assert hooks.cache.get("hello", NEW) is None


def test_a_commit_a_gitlab_push_brought_needs_no_read(hooks: Hooks) -> None:
    push = gitlab_fixture("go-gitlab/push.json")
    brought = push["after"]
    push["ref"] = "refs/heads/master"  # go-gitlab's mike/diaspora: the "diaspora" repository

    assert hooks.gitlab("Push Hook", push).json() == {"result": "accepted"}
    assert hooks.cache.get("diaspora", brought) == []

    push["commits"] = push["commits"][:1]  # the tip was not among what this push brought
    other = "1" * 40
    push["after"] = other
    hooks.gitlab("Push Hook", push)
    assert hooks.cache.get("diaspora", other) is None


def test_a_push_to_a_tip_the_promoter_has_already_wakes_without_a_fetch(
    tmp_path: Path,
) -> None:
    """GitHub's push webhook for the promoter's own merge: its mirror has that tip."""
    have = {("hello", "environment/dev-next", NEW)}
    with running_hooks(tmp_path, has_tip=lambda *tip: tip in have) as hooks:
        hooks.github("push", github_push(distinct=True))
        assert (hooks.woken.keys, hooks.enqueued.keys) == ({"hello-app"}, set())

        moved = github_push(distinct=True) | {"ref": "refs/heads/environment/prod"}
        hooks.github("push", moved)
        assert hooks.enqueued.keys == {"hello-app"}  # a tip it has not: refresh first
