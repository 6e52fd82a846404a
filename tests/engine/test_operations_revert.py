"""A person's revert and the environment they name, at the operations' level: the name
found by branch or by its last part (and nothing for a name no environment has), the
revert's one action naming who asked, and every reason it cannot be done answered as a
refusal (409), word for word."""

from __future__ import annotations

from promoter.engine.core.actions import OpenRevert
from promoter.engine.operations import Refusal, environment_index, revert

from .reverts.test_revert import edit, healthy, staging
from .strategies import Env, build, dry


def test_an_environment_is_found_by_its_branch_or_by_the_last_part_of_it() -> None:
    snapshot = build(Env("dev", active=2), Env("staging", active=2), Env("prod", active=2))
    assert environment_index(snapshot, "environment/staging") == 1
    assert environment_index(snapshot, "staging") == 1
    assert environment_index(snapshot, "prod") == 2
    assert environment_index(snapshot, "dev") == 0


def test_the_last_part_follows_the_last_slash_and_a_branch_without_one_is_its_own() -> None:
    snapshot = build(Env("dev", active=2), Env("staging", active=2), Env("prod", active=2))
    snapshot = edit(edit(snapshot, 0, branch="dev"), 2, branch="environment/eu/prod")
    assert environment_index(snapshot, "dev") == 0
    assert environment_index(snapshot, "prod") == 2
    assert environment_index(snapshot, "environment/eu/prod") == 2
    assert environment_index(snapshot, "eu/prod") is None


def test_a_name_no_environment_has_finds_nothing() -> None:
    snapshot = build(Env("dev", active=2), Env("staging", active=2))
    for name in ("qa", "environment", "environment/", "env/staging", "Staging", ""):
        assert environment_index(snapshot, name) is None


def test_a_persons_revert_is_one_action_that_names_them_and_the_commit_restored() -> None:
    snapshot = staging()
    actions = revert(snapshot, 1, to=None, auto_merge=True, by="ada")
    assert isinstance(actions, list) and len(actions) == 1
    [action] = actions
    assert isinstance(action, OpenRevert)
    assert (action.environment, action.bad_dry_sha, action.restore.dry_sha) == (1, dry(5), dry(3))
    assert action.reason == f"ada asked to revert environment/staging to {dry(3)[:7]}"
    assert (action.trigger, action.auto_merge) == ("manual", True)


def test_a_persons_revert_to_a_named_healthy_commit_keeps_auto_merge_as_asked() -> None:
    snapshot = staging(healthy=healthy("environment/staging", 2, 3))
    actions = revert(snapshot, 1, to=dry(2)[:8], auto_merge=False, by="bob")
    assert isinstance(actions, list)
    [action] = actions
    assert isinstance(action, OpenRevert)
    assert (action.restore.dry_sha, action.auto_merge) == (dry(2), False)


def test_each_reason_a_revert_cannot_be_done_is_a_refusal_in_its_words() -> None:
    kept = staging(healthy=healthy("environment/staging", 5))
    assert revert(kept, 1, to=None, auto_merge=True, by="ada") == Refusal(
        reason="the ledger of environment/staging holds no older healthy commit", status=409
    )
    assert revert(kept, 1, to=dry(5)[:7], auto_merge=True, by="ada") == Refusal(
        reason=f"environment/staging already runs {dry(5)[:7]}"
    )
    assert revert(staging(), 1, to=dry(4), auto_merge=True, by="ada") == Refusal(
        reason=f"the ledger of environment/staging holds no {dry(4)} as a healthy commit"
    )
    broken = edit(staging(), 1, error="the SCM answered 502")
    assert revert(broken, 1, to=None, auto_merge=True, by="ada") == Refusal(
        reason="the SCM answered 502"
    )
