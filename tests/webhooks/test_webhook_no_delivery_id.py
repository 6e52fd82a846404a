"""A GitHub delivery without ``X-GitHub-Delivery`` is de-duplicated by a hash of its body."""

from __future__ import annotations

import json

from webhooks import GitHub
from webhooks.verify import GitHubSignature

from .helpers import GITHUB_SECRET, Hooks, github_fixture


def send_without_id(hooks: Hooks, event: str, raw: bytes) -> dict[str, str]:
    headers = {
        "X-GitHub-Event": event,
        "Content-Type": "application/json",
        "X-Hub-Signature-256": GitHubSignature.sign(GITHUB_SECRET, raw),
    }
    answer = hooks.client.post("/webhooks/github", content=raw, headers=headers)
    assert answer.status_code == 202
    result: dict[str, str] = answer.json()
    return result


def test_the_same_body_sent_twice_without_a_delivery_id_is_processed_once(hooks: Hooks) -> None:
    raw = json.dumps(github_fixture("push/with-new-branch.payload.json")).encode()
    assert send_without_id(hooks, "push", raw)["result"] == "accepted"
    assert send_without_id(hooks, "push", raw)["result"] == "duplicate"
    assert hooks.enqueued.calls == [frozenset({"hello-app"})]


def test_different_bodies_without_a_delivery_id_are_each_processed(hooks: Hooks) -> None:
    push = github_fixture("push/with-new-branch.payload.json")
    first = json.dumps(push).encode()
    second = json.dumps({**push, "after": "f" * 40}).encode()
    assert send_without_id(hooks, "push", first)["result"] == "accepted"
    assert send_without_id(hooks, "push", second)["result"] == "accepted"
    assert len(hooks.enqueued.calls) == 2


def test_the_header_wins_over_the_body_when_it_is_sent() -> None:
    github = GitHub(["a secret value"])
    assert github.delivery_id({"x-github-delivery": "abc"}, b"{}") == "abc"
    hashed = github.delivery_id({}, b"{}")
    assert hashed is not None and hashed.startswith("body-sha256:")
    assert github.delivery_id({}, None) is None  # before the body is read: nothing to log
