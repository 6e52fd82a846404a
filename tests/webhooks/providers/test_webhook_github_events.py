"""GitHub events to strategy keys and status-cache entries."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from promoter.models import Phase
from tests.webhooks.helpers import (
    HELLO_SHA,
    Hooks,
    cached,
    github_fixture,
)

STATUS_SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"


def test_a_push_to_the_dry_branch_enqueues_its_strategy(hooks: Hooks) -> None:
    answer = hooks.github("push", github_fixture("push/with-new-branch.payload.json"))

    assert answer.status_code == 202
    assert hooks.enqueued.calls == [frozenset({"hello-app"})]


@pytest.mark.parametrize(
    ("branch", "keys"),
    [
        ("environment/dev-next", {"hello-app"}),
        ("environment/prod", {"hello-app"}),
        ("infra", {"hello-infra"}),
        ("infra/dev-next", {"hello-infra"}),
    ],
)
def test_a_push_to_a_proposed_or_active_branch_enqueues_its_strategy(
    hooks: Hooks, branch: str, keys: set[str]
) -> None:
    push = github_fixture("push/with-new-branch.payload.json") | {"ref": f"refs/heads/{branch}"}

    assert hooks.github("push", push).json() == {"result": "accepted"}
    assert hooks.enqueued.keys == keys


def test_a_push_to_an_unwatched_branch_is_ignored(hooks: Hooks) -> None:
    push = github_fixture("push/with-new-branch.payload.json") | {"ref": "refs/heads/feature/x"}

    answer = hooks.github("push", push)

    assert (answer.status_code, answer.json()["result"]) == (202, "ignored")
    assert hooks.enqueued.calls == []


def test_a_push_of_hydrator_notes_enqueues_every_strategy_of_the_repository(hooks: Hooks) -> None:
    push = github_fixture("push/with-new-branch.payload.json")
    push["ref"] = "refs/notes/hydrator.metadata"

    assert hooks.github("push", push).status_code == 202
    assert hooks.enqueued.keys == {"hello-app", "hello-infra"}


def test_a_status_updates_the_cache_at_once_and_wakes_the_strategy_tracking_it(
    hooks: Hooks,
) -> None:
    hooks.shas.track("hello-infra", [STATUS_SHA])
    status = github_fixture("status/payload.json") | {
        "state": "failure",
        "target_url": "https://ci/1",
    }

    assert hooks.github("status", status).status_code == 202

    # a new status of a commit it tracks: no ref moved, so its mirror is not refreshed
    assert (hooks.woken.keys, hooks.enqueued.keys) == ({"hello-infra"}, set())
    hooks.cache.store("hello", STATUS_SHA, [])  # mark complete: what a reconcile would read
    [cached] = hooks.cache.get("hello", STATUS_SHA) or []
    assert (cached.key, cached.phase, cached.url) == ("default", Phase.FAILURE, "https://ci/1")
    assert cached.updated_at == datetime(2019, 5, 15, 15, 20, 55, tzinfo=UTC)


def test_a_status_for_an_unknown_sha_of_a_known_repository_enqueues_all_its_strategies(
    hooks: Hooks,
) -> None:
    assert hooks.github("status", github_fixture("status/payload.json")).status_code == 202
    # a commit none of them has read may be on a ref that moved: refresh, then read
    assert (hooks.enqueued.keys, hooks.woken.keys) == ({"hello-app", "hello-infra"}, set())


@pytest.mark.parametrize(
    ("state", "phase"),
    [("success", "success"), ("pending", "pending"), ("failure", "failure"), ("error", "failure")],
)
def test_commit_status_states_map_to_phases(hooks: Hooks, state: str, phase: str) -> None:
    hooks.github("status", github_fixture("status/payload.json") | {"state": state})
    assert cached(hooks, "hello", STATUS_SHA)["default"] == phase


@pytest.mark.parametrize(
    ("fixture", "phase"),
    [
        ("check_run/completed.payload.json", "success"),
        ("check_run/completed.1.payload.json", "failure"),
        ("check_run/created.payload.json", "pending"),
    ],
)
def test_a_check_run_is_cached_under_its_name(hooks: Hooks, fixture: str, phase: str) -> None:
    assert hooks.github("check_run", github_fixture(fixture)).status_code == 202
    assert cached(hooks, "hello", HELLO_SHA) == {"Octocoders-linter": phase}


@pytest.mark.parametrize(
    ("conclusion", "phase"),
    [
        ("neutral", "success"),
        ("skipped", "success"),
        ("timed_out", "failure"),
        ("cancelled", "failure"),
    ],
)
def test_check_run_conclusions_map_to_phases(hooks: Hooks, conclusion: str, phase: str) -> None:
    run = github_fixture("check_run/completed.payload.json")
    run["check_run"]["conclusion"] = conclusion
    hooks.github("check_run", run)
    assert cached(hooks, "hello", HELLO_SHA) == {"Octocoders-linter": phase}


def test_a_check_run_in_progress_is_pending(hooks: Hooks) -> None:
    run = github_fixture("check_run/created.payload.json")
    run["check_run"]["status"] = "in_progress"
    hooks.github("check_run", run)
    assert cached(hooks, "hello", HELLO_SHA) == {"Octocoders-linter": "pending"}


@pytest.mark.parametrize(
    ("fixture", "key"),
    [
        ("check_suite/completed.1.payload.json", "github-actions"),  # app.slug
        ("check_suite/completed.payload.json", "octocoders-linter"),  # no slug: app.name
    ],
)
def test_a_completed_check_suite_is_cached_under_its_app(
    hooks: Hooks, fixture: str, key: str
) -> None:
    suite = github_fixture(fixture)
    assert hooks.github("check_suite", suite).status_code == 202
    assert cached(hooks, "hello", HELLO_SHA) == {key: "success"}


def test_a_merged_promotion_pull_request_enqueues_its_strategy(hooks: Hooks) -> None:
    closed = github_fixture("pull_request/closed.payload.json")
    pr = closed["pull_request"]
    pr["merged"], pr["merged_at"] = True, "2019-05-15T15:21:00Z"
    pr["head"]["ref"], pr["base"]["ref"] = "environment/prod-next", "environment/prod"

    assert hooks.github("pull_request", closed).json() == {"result": "accepted"}
    assert hooks.enqueued.keys == {"hello-app"}


def test_a_revert_pull_request_enqueues_its_strategy(hooks: Hooks) -> None:
    opened = github_fixture("pull_request/opened.payload.json")
    opened["pull_request"]["head"]["ref"] = "infra/dev-revert-6113728"

    assert hooks.github("pull_request", opened).status_code == 202
    assert hooks.enqueued.keys == {"hello-infra"}


def test_a_pull_request_unrelated_to_promotion_is_ignored(hooks: Hooks) -> None:
    answer = hooks.github("pull_request", github_fixture("pull_request/opened.payload.json"))
    assert answer.json() == {"result": "ignored", "reason": "nothing the promoter watches"}
    assert hooks.enqueued.calls == []


def test_pull_request_actions_other_than_the_handled_ones_are_ignored(hooks: Hooks) -> None:
    hooks.shas.track("hello-app", [HELLO_SHA])
    labeled = github_fixture("pull_request/opened.payload.json") | {"action": "labeled"}

    assert hooks.github("pull_request", labeled).json()["result"] == "ignored"
    assert hooks.enqueued.calls == []
