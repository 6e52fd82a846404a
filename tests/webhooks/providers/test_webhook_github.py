"""GitHub deliveries: signatures, content types, de-duplication, answers, metrics and logs."""

from __future__ import annotations

import json
import logging
from urllib.parse import urlencode

import pytest

from promoter.metrics import sample
from tests.webhooks.helpers import (
    GITHUB_OLD_SECRET,
    GITHUB_SECRET,
    Hooks,
    cached,
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


def test_a_form_encoded_delivery_is_accepted_like_json(hooks: Hooks) -> None:
    body = urlencode({"payload": json.dumps(github_fixture("status/payload.json"))}).encode()

    answer = hooks.github("status", body, content_type="application/x-www-form-urlencoded")

    assert answer.json() == {"result": "accepted"}
    assert cached(hooks, "hello", STATUS_SHA) == {"default": "success"}


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


def test_a_400_says_why_in_compact_json_and_is_counted_as_invalid(hooks: Hooks) -> None:
    labels = {"provider": "github", "event": "status", "result": "invalid"}
    before = sample("promoter_webhook_requests_total", labels)

    answer = hooks.github("status", b"{", content_type="application/json")

    reason = answer.json()["reason"]
    assert reason
    assert answer.content == b'{"result":"invalid","reason":' + json.dumps(reason).encode() + b"}"
    assert sample("promoter_webhook_requests_total", labels) == before + 1


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
    assert [getattr(r, "delivery_id", None) for r in records] == ["delivery-42", "delivery-43"]
    logged = " ".join(f"{r.getMessage()} {vars(r)}" for r in records)
    for secret in ("needle-in-the-body", "needle-secret", GITHUB_SECRET, GITHUB_OLD_SECRET):
        assert secret not in logged
