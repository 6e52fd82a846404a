"""The mount API and the receiver's behaviour when the daemon's side misbehaves."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.routing import Route

from promoter.errors import ConfigError
from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from tests.support_logs import daemon_logs
from tests.webhooks.helpers import Hooks, Recorder, github_fixture, make_config, running_hooks
from webhooks import build_routes
from webhooks.deliveries.log import FILE_NAME

ROOT = Path(__file__).resolve().parents[2]


def test_build_routes_gives_a_post_route_per_scm_and_a_close(tmp_path: Path) -> None:
    routes = build_routes(
        config=make_config(),
        enqueue=lambda keys: None,
        status_cache=StatusCache(),
        sha_index=ShaIndex(),
        state_dir=tmp_path,
    )
    try:
        assert [(r.path, r.methods) for r in routes if isinstance(r, Route)] == [
            ("/webhooks/github", {"POST"}),
            ("/webhooks/gitlab", {"POST"}),
            ("/webhooks/forgejo", {"POST"}),
            ("/webhooks/bitbucket-cloud", {"POST"}),
            ("/webhooks/bitbucket-datacenter", {"POST"}),
            ("/webhooks/azure-devops", {"POST"}),
        ]
        assert routes.routes == list(routes)
        assert (tmp_path / FILE_NAME).exists()
        assert routes.deliveries.retention >= 86400
    finally:
        routes.close()


def test_a_secret_that_cannot_be_resolved_fails_at_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("T_GH_SECRET")
    with pytest.raises(ConfigError):
        build_routes(
            config=make_config(),
            enqueue=lambda keys: None,
            status_cache=StatusCache(),
            sha_index=ShaIndex(),
            state_dir=tmp_path,
        )


def test_without_a_configured_secret_every_delivery_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_hooks(tmp_path, make_config(github={"secrets": []}, gitlab={})) as hooks:
        assert (
            hooks.github("ping", github_fixture("ping/payload.json"), secret="").status_code == 401
        )
        assert hooks.gitlab("Push Hook", b"{}", token="").status_code == 401
    assert "webhook has no secret, every delivery is refused" in caplog.messages


def test_get_is_not_allowed(hooks: Hooks) -> None:
    assert hooks.client.get("/webhooks/github").status_code == 405


def test_a_broken_delivery_log_lets_deliveries_through(
    hooks: Hooks, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(delivery_id: str) -> bool:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(hooks.routes.deliveries, "record", disk_full)
    push = github_fixture("push/with-new-branch.payload.json")

    answers = [hooks.github("push", push, delivery="same").json()["result"] for _ in range(2)]

    assert answers == ["accepted", "accepted"]  # hints are idempotent: better twice than never
    assert "webhook delivery log unavailable" in caplog.messages


def test_every_line_logged_while_a_delivery_is_handled_carries_its_delivery_id(
    hooks: Hooks, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(delivery_id: str) -> bool:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(hooks.routes.deliveries, "record", disk_full)
    push = github_fixture("push/with-new-branch.payload.json")
    with daemon_logs() as out:
        hooks.github("push", push, delivery="d-7")
        hooks.github("push", push, delivery="d-8")
    logged = [json.loads(line) for line in out.getvalue().splitlines()]
    ours = [line for line in logged if line["logger"].startswith("promoter.")]  # not httpx's
    assert [(line["msg"], line.get("delivery_id")) for line in ours] == [
        ("webhook delivery log unavailable", "d-7"),
        ("webhook accepted", "d-7"),
        ("webhook delivery log unavailable", "d-8"),
        ("webhook accepted", "d-8"),
    ]


def test_a_failure_inside_the_daemon_answers_503_and_a_redelivery_is_processed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    push = github_fixture("push/with-new-branch.payload.json")
    with running_hooks(tmp_path, enqueued=Recorder(failures=1)) as hooks:
        first = hooks.github("push", push, delivery="d-1")
        again = hooks.github("push", push, delivery="d-1")
    assert (first.status_code, again.status_code) == (503, 202)
    assert again.json() == {"result": "accepted"}
    assert len(hooks.enqueued.calls) == 2
    assert "webhook dispatch failed" in caplog.messages


def test_the_receivers_import_neither_git_nor_an_scm_client() -> None:
    code = (
        "import sys, webhooks\n"
        "loaded = {m.split('.')[0] for m in sys.modules}\n"
        "print(sorted(loaded & {'git', 'github', 'gitlab', 'scm_plugins', 'requests'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


def test_a_refusal_is_logged_with_the_delivery_id(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with running_hooks(tmp_path, make_config(maxBodyBytes=100)) as hooks:
        hooks.github("push", b"x" * 101, delivery="big-1")
        hooks.gitlab("Push Hook", b"{}", token="wrong", headers={"X-Gitlab-Event-UUID": "u-1"})
    delivered = {(r.getMessage(), getattr(r, "delivery_id", None)) for r in caplog.records}
    assert ("webhook body too large", "big-1") in delivered
    assert ("webhook unauthorized", "u-1") in delivered
