"""A failed reconcile shows its real error, backs off to the cap for a lasting refusal,
a thing that vanished is read again with backoff, and a permanent error parks its strategy
until a webhook or a moved ref wakes it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.daemon import Outcome, Runtime, Workers, WorkQueue
from promoter.errors import ScmAuthError, ScmConflict, ScmNotFound
from promoter.models import CommitStatus, Phase
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

DEV = ENVIRONMENTS[0]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def dev_verdict(runtime: Runtime) -> Any:
    view = runtime.reconciler.view("guestbook")
    assert view is not None and view.decision is not None
    return next(v for v in view.decision.environments if v.branch == DEV)


def test_a_merge_refused_for_a_lasting_reason_is_shown_and_retried_at_the_cap(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    runtime = Daemon(local_config(gitops.path, tmp_path / "state", maxBackoff="300s")).runtime
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile("guestbook")
    assert "waiting for ci" in dev_verdict(runtime).reason
    plugin: Any = runtime.plugins["local"]

    def refused(**kw: Any) -> str:
        raise ScmConflict("GitHub answered 405: Pull Request is not mergeable", lasting=True)

    plugin.merge_pull_request = refused
    head = gitops.tip(f"{DEV}-next")
    runtime.post_status("gitops", head, CommitStatus(key="ci", phase=Phase.SUCCESS))
    clock = Clock()
    queue = WorkQueue(max_delay=300.0, clock=clock)
    Workers(queue, runtime.reconciler.reconcile, count=0).process("guestbook")
    verdict = dev_verdict(runtime)
    assert (verdict.state.value, verdict.reason) == (
        "error",
        "GitHub answered 405: Pull Request is not mergeable",
    )
    view = runtime.reconciler.view("guestbook")
    assert view is not None and view.decision is not None
    others = [v.state.value for v in view.decision.environments if v.branch != DEV]
    assert others and "error" not in others  # the error shows where it happened only
    clock.now = 299.0
    assert queue.get(timeout=0) is None
    clock.now = 300.0
    assert queue.get(timeout=0) == "guestbook"


def test_a_permanent_error_parks_the_strategy_until_a_webhook_and_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    def reconcile(key: str) -> Outcome:
        calls.append(key)
        raise ScmAuthError("GitHub answered 401: A JSON web token could not be decoded")

    queue = WorkQueue()
    workers = Workers(queue, reconcile, count=0)
    with caplog.at_level(logging.INFO):
        workers.process("guestbook")
    assert [r.message for r in caplog.records] == ["reconcile failed"]
    assert queue.parked() == {
        "guestbook": "GitHub answered 401: A JSON web token could not be decoded"
    }
    queue.add_many(["guestbook"])  # the resync
    assert queue.get(timeout=0.2) is None
    queue.add_many(["guestbook"], unpark=True)  # a webhook, a moved ref, a new configuration
    assert queue.get(timeout=0) == "guestbook"
    assert queue.parked() == {}


def test_a_pull_request_that_vanished_is_read_again_with_backoff_and_never_parked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def reconcile(key: str) -> Outcome:
        raise ScmNotFound("GitHub answered 404: Not Found")

    clock = Clock()
    queue = WorkQueue(base_delay=1.0, max_delay=300.0, clock=clock)
    workers = Workers(queue, reconcile, count=0)
    with caplog.at_level(logging.INFO):
        workers.process("guestbook")
        assert queue.parked() == {}
        clock.now = 0.999
        assert queue.get(timeout=0) is None
        clock.now = 1.0
        assert queue.get(timeout=0) == "guestbook"
        workers.process("guestbook")
        queue.done("guestbook")
        queue.add_many(["guestbook"], soft=True)  # the resync does not cut the backoff short
        clock.now = 2.999
        assert queue.get(timeout=0) is None
        clock.now = 3.0
        assert queue.get(timeout=0) == "guestbook"
    assert queue.parked() == {}
    assert [(r.levelname, r.message, r.__dict__.get("delay")) for r in caplog.records] == [
        ("WARNING", "reconcile failed", 1.0),
        ("WARNING", "reconcile failed", 2.0),
    ]


def test_a_parked_strategy_shows_in_readyz_and_in_its_status(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    runtime = daemon.runtime
    runtime.reconciler.reconcile("guestbook")
    runtime.queue.park("guestbook", "GitHub answered 401: Bad credentials")
    with TestClient(daemon.app) as client:
        runtime.queue.park("guestbook", "GitHub answered 401: Bad credentials")
        ready = client.get("/readyz").json()
        view = client.get("/api/v1/strategies/guestbook").json()
    assert ready["parked"] == {"guestbook": "GitHub answered 401: Bad credentials"}
    assert view["error"] == (
        "parked until its configuration or a webhook changes: GitHub answered 401: Bad credentials"
    )
