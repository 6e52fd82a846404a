"""Notifications from a running daemon on the sandbox, and ``promoter notify test``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.cli.main import main
from promoter.wiring import Daemon
from tests.notify.receiver import Receiver
from tests.support import GitOpsRepo, local_config, wait_for


def test_a_promotion_in_the_daemon_sends_opened_then_merged(
    receiver: Receiver, tmp_path: Path
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    config = local_config(gitops.path, tmp_path / "state")
    config = config.model_copy(
        update={
            "notifications": config.notifications.model_validate(
                {
                    "sinks": [
                        {"name": "ops", "url": receiver.url, "environments": ["environment/dev"]}
                    ]
                }
            )
        }
    )
    with TestClient(Daemon(config).app) as client:
        dry = gitops.change("1.1.0", "Bump guestbook to 1.1.0")

        def dev() -> dict[str, object]:
            env: dict[str, object] = client.get("/api/v1/strategies/guestbook").json()[
                "environments"
            ][0]
            return env

        pr = wait_for(lambda: (e := dev()).get("pullRequest") and e, what="a dev PR")
        sha = pr["proposed"]["hydratedSha"]  # type: ignore[index]
        client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": "ci", "phase": "success"},
        )
        wait_for(lambda: len(receiver.requests) >= 2, what="two notifications")
    events = [json.loads(r.body) for r in receiver.requests]
    assert [e["type"] for e in events[:2]] == [
        "dev.promoter.promotion.opened",
        "dev.promoter.promotion.merged",
    ]
    opened, merged = events[0]["data"], events[1]["data"]
    assert (opened["drySha"], opened["hydratedSha"]) == (dry, sha)
    assert merged["drySha"] == dry
    assert merged["hydratedSha"] and merged["hydratedSha"] != dry


def test_a_failed_gate_and_an_environment_held_up_are_told_once_with_their_reasons(
    receiver: Receiver, tmp_path: Path
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    config = local_config(gitops.path, tmp_path / "state")
    settings = {"sinks": [{"name": "ops", "url": receiver.url}], "blockedAfter": "0.3s"}
    config = config.model_copy(
        update={"notifications": config.notifications.model_validate(settings)}
    )
    with TestClient(Daemon(config).app) as client:
        dry = gitops.change("1.1.0", "Bump guestbook to 1.1.0")

        def dev() -> dict[str, object]:
            env: dict[str, object] = client.get("/api/v1/strategies/guestbook").json()[
                "environments"
            ][0]
            return env

        pr = wait_for(lambda: (e := dev()).get("pullRequest") and e, what="a dev PR")
        sha = pr["proposed"]["hydratedSha"]  # type: ignore[index]

        def told(event: str) -> list[dict[str, object]]:
            found = [json.loads(r.body)["data"] for r in receiver.requests]
            return [d for d in found if d["event"] == event]

        blocked = wait_for(lambda: told("promotion.blocked"), what="promotion.blocked")
        client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": "ci", "phase": "failure", "description": "3 tests failed"},
        )
        failed = wait_for(lambda: told("gate.failed"), what="gate.failed")
        client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": "ci", "phase": "failure", "description": "3 tests failed"},
        )
        client.post("/api/v1/refresh", json={})
        wait_for(lambda: len(receiver.requests) >= 2, what="the requests")
    assert [(b["environment"], b["drySha"]) for b in blocked] == [("environment/dev", dry)]
    assert "after the environment before it was ready" in str(blocked[0]["message"])
    assert len(told("promotion.blocked")) == 1  # staging and prod wait for dev: not blocked
    assert [(f["environment"], f["hydratedSha"], f["drySha"]) for f in failed] == [
        ("environment/dev", sha, dry)
    ]
    assert "3 tests failed" in str(failed[0]["message"])
    assert len(told("gate.failed")) == 1


def test_notify_test_sends_to_each_sink_and_reports_the_answer(
    receiver: Receiver, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "promoter.yaml"
    config.write_text(
        f"notifications:\n  sinks:\n    - {{name: chat, url: '{receiver.url}', format: slack}}\n"
    )
    assert main(["notify", "test", "--config", str(config)]) == 0
    assert capsys.readouterr().out.strip() == "chat (slack): HTTP 200"
    assert "a test notification for sink chat" in json.loads(receiver.requests[0].body)["text"]
    receiver.answers = [500]
    assert main(["notify", "test", "--config", str(config)]) == 1
    assert "chat (slack): HTTP 500" in capsys.readouterr().out
