"""The debug line the receiver logs for each delivery it dispatched: why an ignored one
was ignored, and every repository and strategy key of an accepted one, each list
comma-separated (a delivery that reaches two repositories or wakes two strategies)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.support_logs import daemon_logs
from tests.webhooks.helpers import github_fixture, make_config, running_hooks

STATUS = github_fixture("status/payload.json")
TAG_PUSH = github_fixture("push/payload.json")  # refs/tags/simple-tag: no strategy watches it


def logged(out: Any, message: str) -> list[dict[str, Any]]:
    """The promoter's JSON log lines with this message."""
    found = [json.loads(line) for line in out.getvalue().splitlines()]
    return [line for line in found if line["msg"] == message]


def test_an_ignored_delivery_is_logged_with_the_reason_it_was_answered(tmp_path: Path) -> None:
    with running_hooks(tmp_path) as hooks, daemon_logs() as out:
        answer = hooks.github("push", TAG_PUSH, delivery="d-tag")
    reason = answer.json()["reason"]
    assert (answer.status_code, answer.json()["result"]) == (202, "ignored")
    assert reason
    [line] = logged(out, "webhook ignored")
    assert (line["delivery_id"], line["reason"], line["repository"]) == ("d-tag", reason, "hello")


def test_a_delivery_for_two_repositories_and_strategies_logs_each_separated_by_commas(
    tmp_path: Path,
) -> None:
    config = make_config()
    twin = config.repositories[0].model_copy(update={"name": "hello-twin"})
    config = config.model_copy(update={"repositories": [*config.repositories, twin]})
    with running_hooks(tmp_path, config) as hooks, daemon_logs() as out:
        answer = hooks.github("status", STATUS, delivery="d-status")
    assert answer.json() == {"result": "accepted"}
    assert hooks.woken.keys | hooks.enqueued.keys == {"hello-app", "hello-infra"}
    [line] = logged(out, "webhook accepted")
    assert line["delivery_id"] == "d-status"
    assert line["repository"] == "hello,hello-twin"
    assert line["keys"] == "hello-app,hello-infra"
    assert line["reason"] == ""
