"""GitHub deliveries: signatures, content types, events to keys and cache entries, answers."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest

from promoter.metrics import sample
from promoter.models import Phase
from tests.webhooks.helpers import (
    GITHUB_OLD_SECRET,
    GITHUB_SECRET,
    HELLO_SHA,
    Hooks,
    github_fixture,
)
from webhooks.verify import GitHubSignature

STATUS_SHA = "6113728f27ae82c7b1a177c8d03f9e96e0adf246"


def test_githubs_published_test_vector_verifies() -> None:
    signature = GitHubSignature(["It's a Secret to Everybody"])
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

    assert GitHubSignature.sign("It's a Secret to Everybody", b"Hello, World!") == expected
    assert signature.verify(expected, b"Hello, World!")
    assert not signature.verify(expected, b"Hello, World?")
    assert not signature.verify(expected.upper(), b"Hello, World!")
    assert not signature.verify(expected.replace("sha256=", "sha1="), b"Hello, World!")


def test_no_configured_secret_verifies_nothing() -> None:
    assert not GitHubSignature([]).verify(GitHubSignature.sign("", b"x"), b"x")


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


def test_a_status_updates_the_cache_at_once_and_enqueues_the_strategy_tracking_it(
    hooks: Hooks,
) -> None:
    hooks.shas.track("hello-infra", [STATUS_SHA])
    status = github_fixture("status/payload.json") | {
        "state": "failure",
        "target_url": "https://ci/1",
    }

    assert hooks.github("status", status).status_code == 202

    assert hooks.enqueued.keys == {"hello-infra"}
    hooks.cache.store("hello", STATUS_SHA, [])  # mark complete: what a reconcile would read
    [cached] = hooks.cache.get("hello", STATUS_SHA) or []
    assert (cached.key, cached.phase, cached.url) == ("default", Phase.FAILURE, "https://ci/1")
    assert cached.updated_at == datetime(2019, 5, 15, 15, 20, 55, tzinfo=UTC)


def test_a_status_for_an_unknown_sha_of_a_known_repository_enqueues_all_its_strategies(
    hooks: Hooks,
) -> None:
    assert hooks.github("status", github_fixture("status/payload.json")).status_code == 202
    assert hooks.enqueued.keys == {"hello-app", "hello-infra"}


@pytest.mark.parametrize(
    ("state", "phase"),
    [("success", "success"), ("pending", "pending"), ("failure", "failure"), ("error", "failure")],
)
def test_commit_status_states_map_to_phases(hooks: Hooks, state: str, phase: str) -> None:
    hooks.github("status", github_fixture("status/payload.json") | {"state": state})
    assert _cached(hooks, "hello", STATUS_SHA)["default"] == phase


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
    assert _cached(hooks, "hello", HELLO_SHA) == {"Octocoders-linter": phase}


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
    assert _cached(hooks, "hello", HELLO_SHA) == {"Octocoders-linter": phase}


def test_a_check_run_in_progress_is_pending(hooks: Hooks) -> None:
    run = github_fixture("check_run/created.payload.json")
    run["check_run"]["status"] = "in_progress"
    hooks.github("check_run", run)
    assert _cached(hooks, "hello", HELLO_SHA) == {"Octocoders-linter": "pending"}


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
    assert _cached(hooks, "hello", HELLO_SHA) == {key: "success"}


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


def test_a_form_encoded_delivery_is_accepted_like_json(hooks: Hooks) -> None:
    body = urlencode({"payload": json.dumps(github_fixture("status/payload.json"))}).encode()

    answer = hooks.github("status", body, content_type="application/x-www-form-urlencoded")

    assert answer.json() == {"result": "accepted"}
    assert _cached(hooks, "hello", STATUS_SHA) == {"default": "success"}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"[1, 2]", "application/json"),
        (b"\xff\xfe", "application/json"),
        (b"[" * 100_000, "application/json"),
        (b"payload=%7Bnot+json", "application/x-www-form-urlencoded"),
        (b"other=1", "application/x-www-form-urlencoded"),
        (b"\xff=\xff", "application/x-www-form-urlencoded"),
        (b"{}", "text/plain"),
        (b"{}", ""),
    ],
)
def test_a_malformed_body_is_400(hooks: Hooks, body: bytes, content_type: str) -> None:
    answer = hooks.github("status", body, content_type=content_type)
    assert (answer.status_code, answer.json()["result"]) == (400, "invalid")


def test_a_payload_missing_what_its_event_needs_is_400(hooks: Hooks) -> None:
    status = github_fixture("status/payload.json")
    del status["sha"]
    assert hooks.github("status", status).status_code == 400


@pytest.mark.parametrize(
    "signature",
    [None, "", "sha256=", "sha256=00", "sha1=abc", "sha256=" + "0" * 64, b"sha256=\xe9\xe9"],
)
def test_a_missing_or_wrong_signature_is_401_without_detail(
    hooks: Hooks, signature: str | bytes | None
) -> None:
    headers = {} if signature is None else {"X-Hub-Signature-256": signature}
    before = sample(
        "promoter_webhook_requests_total",
        {"provider": "github", "event": "status", "result": "unauthorized"},
    )

    answer = hooks.github(
        "status", github_fixture("status/payload.json"), secret=None, headers=headers
    )

    assert answer.status_code == 401
    assert answer.json() == {"result": "unauthorized"}
    assert hooks.enqueued.calls == []
    assert hooks.cache.get("hello", STATUS_SHA) is None
    after = sample(
        "promoter_webhook_requests_total",
        {"provider": "github", "event": "status", "result": "unauthorized"},
    )
    assert after == before + 1


def test_a_body_signed_with_another_secret_is_401(hooks: Hooks) -> None:
    answer = hooks.github("status", github_fixture("status/payload.json"), secret="guess")
    assert answer.status_code == 401


def test_the_old_and_the_new_secret_both_verify_while_rotating(hooks: Hooks) -> None:
    status = github_fixture("status/payload.json")
    assert hooks.github("status", status, secret=GITHUB_OLD_SECRET).status_code == 202
    assert hooks.github("status", status, secret=GITHUB_SECRET).status_code == 202


def test_a_redelivery_answers_202_and_is_not_processed_again(hooks: Hooks) -> None:
    push = github_fixture("push/with-new-branch.payload.json")
    labels = {"provider": "github", "event": "push", "result": "duplicate"}
    before = sample("promoter_webhook_requests_total", labels)

    first = hooks.github("push", push, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
    again = hooks.github("push", push, delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")

    assert (first.status_code, first.json()["result"]) == (202, "accepted")
    assert (again.status_code, again.json()["result"]) == (202, "duplicate")
    assert hooks.enqueued.calls == [frozenset({"hello-app"})]
    assert sample("promoter_webhook_requests_total", labels) == before + 1


def test_an_unknown_repository_is_ignored_with_202(hooks: Hooks) -> None:
    status = github_fixture("status/payload.json")
    status["repository"] = status["repository"] | {
        "full_name": "someone/else",
        "clone_url": "https://github.com/someone/else.git",
        "html_url": "https://github.com/someone/else",
        "ssh_url": "git@github.com:someone/else.git",
        "git_url": "git://github.com/someone/else.git",
        "svn_url": "https://github.com/someone/else",
    }

    answer = hooks.github("status", status)

    assert answer.json() == {"result": "ignored", "reason": "unknown repository"}
    assert hooks.enqueued.calls == [] and hooks.cache.get("hello", STATUS_SHA) is None


def test_other_events_are_ignored_and_counted_under_their_name(hooks: Hooks) -> None:
    labels = {"provider": "github", "event": "watch", "result": "ignored"}
    before = sample("promoter_webhook_requests_total", labels)

    answer = hooks.github("watch", {"action": "started"})

    assert (answer.status_code, answer.json()["result"]) == (202, "ignored")
    assert sample("promoter_webhook_requests_total", labels) == before + 1


def test_an_unverified_event_name_is_counted_as_other(hooks: Hooks) -> None:
    labels = {"provider": "github", "event": "other", "result": "unauthorized"}
    before = sample("promoter_webhook_requests_total", labels)
    hooks.github("made_up_event_1", {}, secret=None)
    assert sample("promoter_webhook_requests_total", labels) == before + 1


def test_ping_answers_200(hooks: Hooks) -> None:
    answer = hooks.github("ping", github_fixture("ping/payload.json"))
    assert (answer.status_code, answer.json()) == (200, {"result": "pong"})


def test_the_duration_of_every_delivery_is_observed(hooks: Hooks) -> None:
    before = sample("promoter_webhook_duration_seconds_count", {"provider": "github"})
    hooks.github("ping", github_fixture("ping/payload.json"))
    hooks.github("ping", b"{}", secret=None)
    assert sample("promoter_webhook_duration_seconds_count", {"provider": "github"}) == before + 2


def test_logs_name_the_delivery_and_never_the_secret_or_the_body(
    hooks: Hooks, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="promoter.webhooks")
    status = github_fixture("status/payload.json") | {"description": "needle-in-the-body"}

    hooks.github("status", status, delivery="delivery-42")
    hooks.github("status", status, delivery="delivery-43", secret="needle-secret")

    records = [r for r in caplog.records if r.name == "promoter.webhooks"]
    assert [getattr(r, "delivery", None) for r in records] == ["delivery-42", "delivery-43"]
    logged = " ".join(f"{r.getMessage()} {vars(r)}" for r in records)
    for secret in ("needle-in-the-body", "needle-secret", GITHUB_SECRET, GITHUB_OLD_SECRET):
        assert secret not in logged


def _cached(hooks: Hooks, repo: str, sha: str) -> dict[str, Any]:
    hooks.cache.store(repo, sha, [])  # a full read finding nothing: keeps the webhook's entries
    return {s.key: s.phase.value for s in hooks.cache.get(repo, sha) or []}
