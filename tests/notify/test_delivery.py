"""Notifications delivered to a real HTTP receiver on 127.0.0.1: signed, retried after
500s, and kept on disk across a restart."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest

from promoter.config.notifications import Notifications
from promoter.daemon import ActionEvent
from promoter.notify import Notifier
from tests.notify.receiver import Receiver
from tests.support import wait_for

SECRET = "notify-test-secret"


def settings(url: str, **sink: Any) -> Notifications:
    return Notifications.model_validate(
        {
            "sinks": [{"name": "ops", "url": url, **sink}],
            "maxBackoff": "0.05s",
            "blockedAfter": "1h",
        }
    )


def merged(env: str = "environment/dev", strategy: str = "guestbook") -> ActionEvent:
    return ActionEvent("merged", strategy, env, "merged 3ebe081", "3ebe081d" * 5, 7)


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMOTER_NOTIFY_SECRET", SECRET)


def test_a_merge_arrives_as_a_signed_cloudevent(receiver: Receiver, tmp_path: Path) -> None:
    notifier = Notifier(
        settings(receiver.url, secret={"fromEnv": "PROMOTER_NOTIFY_SECRET"}),
        state_dir=tmp_path,
        public_url="http://127.0.0.1:8080",
    )
    notifier.start()
    try:
        notifier(merged())
        got = wait_for(lambda: receiver.requests, what="a delivery")[0]
    finally:
        notifier.close()
    expected = "sha256=" + hmac.new(SECRET.encode(), got.body, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(got.headers["X-Promoter-Signature-256"], expected)
    assert got.headers["Content-Type"] == "application/cloudevents+json"
    event = json.loads(got.body)
    assert event["specversion"] == "1.0"
    assert event["type"] == "dev.promoter.promotion.merged"
    assert event["source"] == "/promoter/strategies/guestbook"
    assert event["subject"] == "environment/dev"
    assert event["data"]["pullRequest"] == 7
    assert event["data"]["url"] == "http://127.0.0.1:8080/dashboard/guestbook"
    assert not list((tmp_path / "notifications" / "queue").iterdir())


def test_a_delivery_is_retried_after_500s_until_the_receiver_takes_it(
    receiver: Receiver, tmp_path: Path
) -> None:
    receiver.answers = [500, 500, 503]
    notifier = Notifier(settings(receiver.url), state_dir=tmp_path, public_url="http://x")
    notifier.start()
    try:
        notifier(merged())
        wait_for(lambda: receiver.requests, what="the delivery after three failures")
    finally:
        notifier.close()
    assert receiver.attempts == 4
    assert len(receiver.requests) == 1
    assert not notifier.queue.pending()


def test_a_delivery_that_never_succeeds_is_set_aside_after_max_attempts(
    receiver: Receiver, tmp_path: Path
) -> None:
    receiver.answers = [500] * 10
    notifier = Notifier(
        settings(receiver.url, maxAttempts=3), state_dir=tmp_path, public_url="http://x"
    )
    notifier.start()
    try:
        notifier(merged())
        wait_for(lambda: list((tmp_path / "notifications" / "dead").glob("*.json")), what="dead")
    finally:
        notifier.close()
    assert receiver.attempts == 3 and not receiver.requests


def test_nothing_queued_is_lost_across_a_restart(receiver: Receiver, tmp_path: Path) -> None:
    receiver.answers = [500] * 1000
    first = Notifier(settings(receiver.url), state_dir=tmp_path, public_url="http://x")
    first.start()
    for env in ("environment/dev", "environment/staging", "environment/prod"):
        first(merged(env))
    wait_for(lambda: receiver.attempts >= 3, what="failed attempts")
    first.close()
    assert len(list((tmp_path / "notifications" / "queue").glob("*.json"))) == 3

    receiver.answers = []
    second = Notifier(settings(receiver.url), state_dir=tmp_path, public_url="http://x")
    second.start()
    try:
        wait_for(lambda: len(receiver.requests) == 3, what="three deliveries after the restart")
    finally:
        second.close()
    subjects = [json.loads(r.body)["subject"] for r in receiver.requests]
    assert subjects == ["environment/dev", "environment/staging", "environment/prod"]
    assert not second.queue.pending()


def test_a_full_queue_drops_the_oldest_delivery(tmp_path: Path) -> None:
    config = Notifications.model_validate(
        {"sinks": [{"name": "ops", "url": "http://127.0.0.1:9/hook"}], "queueSize": 2}
    )
    notifier = Notifier(config, state_dir=tmp_path, public_url="http://x")
    for env in ("a", "b", "c"):
        notifier(merged(env))
    kept = [json.loads(d.body)["subject"] for d in notifier.queue.pending()]
    assert kept == ["b", "c"]
