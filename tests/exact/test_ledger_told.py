"""Each ledger change is told once it is written: a log line at its level with the
strategy, environment, dry commit and the change's own fields, and an event for the
observers (notifications, DORA) with its pull request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promoter.cli.sandbox import git
from promoter.daemon import ActionEvent
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config
from tests.support_logs import daemon_logs

DEV = ENVIRONMENTS[0]


def test_a_hold_is_logged_as_a_warning_with_its_fields_and_told_to_the_observers(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    events: list[ActionEvent] = []
    runtime = Daemon(
        local_config(gitops.path, tmp_path / "state"), observers=[events.append]
    ).runtime
    bad = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    runtime.reconciler.reconcile("guestbook")
    with daemon_logs() as out:
        runtime.operations.hold("guestbook", DEV, dry_sha=bad, reason="bad build", by="ada")
    lines: list[dict[str, Any]] = [json.loads(line) for line in out.getvalue().splitlines()]
    held = [line for line in lines if line["msg"] == "hold set"]
    assert held, lines
    first = held[0]
    assert first["level"] == "warning"
    assert (first["strategy"], first["sha"]) == ("guestbook", bad)
    assert first["environment"] in ENVIRONMENTS
    told = [e for e in events if e.kind == "held"]
    assert {e.environment for e in told} == set(ENVIRONMENTS)
    assert all((e.strategy, e.sha, e.dry_sha) == ("guestbook", bad, bad) for e in told)
    assert all("bad build" in e.message for e in told)
    assert git(gitops.path, "rev-parse", "main") == bad


def test_a_revert_is_told_with_its_pull_request(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from promoter.engine import HealthyRecord

    gitops = GitOpsRepo.create(tmp_path)
    events: list[ActionEvent] = []
    runtime = Daemon(
        local_config(gitops.path, tmp_path / "state"), observers=[events.append]
    ).runtime
    mirror = runtime.mirrors.fresh(runtime.config.repository("gitops"))
    first = git(gitops.path, "rev-parse", "main")
    healthy = HealthyRecord(
        dry_sha=first, hydrated_sha=gitops.tip(DEV), healthy_since=datetime(2026, 1, 1, tzinfo=UTC)
    )
    runtime.ledger.update(mirror, "guestbook", DEV, lambda led: led.with_healthy(healthy))
    bad = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    git(gitops.path, "update-ref", f"refs/heads/{DEV}", gitops.tip(f"{DEV}-next"))
    runtime.mirrors.invalidate("gitops")
    with daemon_logs() as out:
        runtime.operations.revert("guestbook", DEV, to=None, by="ada")
    [told] = [e for e in events if e.kind == "revert"]
    plugin: Any = runtime.plugins["local"]
    [pr] = [p for p in plugin.pull_requests(repo=runtime.config.repository("gitops"))]
    assert (told.environment, told.pr, told.sha, told.dry_sha) == (DEV, pr.number, bad, bad)
    [line] = [json.loads(x) for x in out.getvalue().splitlines() if '"revert opened"' in x]
    assert (line["level"], line["pr"], line["restore"]) == ("warning", pr.number, first)
