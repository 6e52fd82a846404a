"""What the receiver answers, counts and logs for each kind of delivery: the reason of a
refusal in its answer, a large body verified off the event loop, a ping answered again
on redelivery, the journal append before the answer, the metric labels of unverified
requests, and the fields of its structured log lines."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from promoter.metrics import REGISTRY
from tests.support_logs import daemon_logs
from tests.webhooks.helpers import Hooks, Recorder, github_fixture, running_hooks
from webhooks.deliveries.store import delivery_key
from webhooks.receiver import INLINE_LIMIT

PUSH = github_fixture("push/with-new-branch.payload.json")


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def lines(out: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_refused_body_says_why_in_the_answer(hooks: Hooks) -> None:
    bad_length = hooks.client.post(
        "/webhooks/github",
        content=b"{}",
        headers={"X-GitHub-Event": "push", "Content-Length": "two"},
    )
    assert bad_length.status_code == 400
    assert bad_length.json() == {"result": "invalid", "reason": "bad content-length"}
    garbled = hooks.github("push", b"{not json")
    assert garbled.status_code == 400
    assert garbled.json()["result"] == "invalid" and garbled.json()["reason"] != "None"


def test_a_body_over_the_inline_limit_is_verified_and_parsed_and_accepted(hooks: Hooks) -> None:
    """Verified and parsed on a worker thread (large bodies would stall the event loop)."""
    padded = {**PUSH, "padding": "x" * (INLINE_LIMIT + 1)}
    raw = json.dumps(padded).encode()
    assert len(raw) > INLINE_LIMIT
    answer = hooks.github("push", raw)
    assert (answer.status_code, answer.json()) == (202, {"result": "accepted"})
    assert hooks.enqueued.keys
    forged = hooks.github("push", raw, secret="not the secret")
    assert forged.status_code == 401


def test_a_redelivered_ping_is_answered_pong_again(hooks: Hooks) -> None:
    ping = github_fixture("ping/payload.json")
    first = hooks.github("ping", ping, delivery="ping-1")
    again = hooks.github("ping", ping, delivery="ping-1")
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert again.json()["result"] != "duplicate"


def test_an_accepted_delivery_is_answered_only_after_its_id_is_persisted(
    hooks: Hooks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answered, a delivery is never lost to a crash: the journal append comes first. A
    ping or a duplicate is answered without one."""
    log = hooks.routes.deliveries
    persisted: list[bool] = []
    real = log.persist

    def persist() -> None:
        persisted.append(log._known(delivery_key("github:d-stored")))
        real()

    monkeypatch.setattr(log, "persist", persist)
    hooks.github("ping", github_fixture("ping/payload.json"), delivery="d-ping")
    assert persisted == []
    assert hooks.github("push", PUSH, delivery="d-stored").json() == {"result": "accepted"}
    assert persisted == [True]
    assert hooks.github("push", PUSH, delivery="d-stored").json() == {"result": "duplicate"}
    assert persisted == [True]


def test_an_unverified_request_is_counted_under_other_never_under_its_own_event_name(
    hooks: Hooks,
) -> None:
    """A stranger's event names must not grow the metric's label set."""
    labels = {"provider": "github", "event": "made_up_event", "result": "unauthorized"}
    other = {**labels, "event": "other"}
    before = sample("promoter_webhook_requests_total", other)
    assert hooks.github("made_up_event", b"{}", secret="wrong").status_code == 401
    assert sample("promoter_webhook_requests_total", labels) == 0.0
    assert sample("promoter_webhook_requests_total", other) == before + 1


def test_a_failure_inside_the_daemon_is_counted_as_an_error(tmp_path: Path) -> None:
    labels = {"provider": "github", "event": "push", "result": "error"}
    before = sample("promoter_webhook_requests_total", labels)
    with running_hooks(tmp_path, enqueued=Recorder(failures=1)) as hooks:
        assert hooks.github("push", PUSH).status_code == 503
    assert sample("promoter_webhook_requests_total", labels) == before + 1


def test_the_time_to_answer_is_observed_as_a_short_positive_duration(hooks: Hooks) -> None:
    labels = {"provider": "github"}
    count = sample("promoter_webhook_duration_seconds_count", labels)
    total = sample("promoter_webhook_duration_seconds_sum", labels)
    hooks.github("push", PUSH)
    assert sample("promoter_webhook_duration_seconds_count", labels) == count + 1
    took = sample("promoter_webhook_duration_seconds_sum", labels) - total
    assert 0 < took < 30


def test_log_lines_about_a_delivery_name_provider_event_repository_keys_and_client(
    hooks: Hooks,
) -> None:
    with daemon_logs() as out:
        hooks.github("push", PUSH, delivery="d-logged")
        hooks.github("push", PUSH, secret="wrong", delivery="d-forged")
    ours = {line["msg"]: line for line in lines(out) if line["logger"].startswith("promoter.")}
    accepted = ours["webhook accepted"]
    assert (accepted["provider"], accepted["event"]) == ("github", "push")
    assert accepted["delivery_id"] == "d-logged"
    assert accepted["repository"] == "hello"
    assert accepted["keys"] == ",".join(sorted(hooks.enqueued.keys))
    assert "reason" in accepted
    refused = ours["webhook unauthorized"]
    assert (refused["provider"], refused["event"], refused["delivery_id"]) == (
        "github",
        "push",
        "d-forged",
    )
    assert refused["client"] == "testclient"


def test_a_client_gone_before_its_body_is_logged_invalid_saying_so(hooks: Hooks) -> None:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/webhooks/github",
        "raw_path": b"/webhooks/github",
        "query_string": b"",
        "headers": [(b"x-github-event", b"push"), (b"content-length", b"100")],
        "client": ("192.0.2.7", 4711),
        "server": ("testserver", 80),
        "scheme": "http",
        "http_version": "1.1",
        "root_path": "",
        "asgi": {"version": "3.0"},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    with daemon_logs() as out:
        asyncio.run(hooks.client.app(scope, receive, send))
    invalid = [line for line in lines(out) if line["msg"] == "webhook invalid"]
    assert [line["reason"] for line in invalid] == ["client went away"]
    assert not hooks.enqueued.keys
