"""``promoter merge``: a person merges the PR that waits for one, through the head guard."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.daemon import OperationError
from promoter.engine import HealthyRecord
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for

DEV = ENVIRONMENTS[0]


def dev(client: TestClient) -> dict[str, Any]:
    view = client.get("/api/v1/strategies/guestbook").json()
    return next(e for e in view["environments"] if e["branch"] == DEV)


def test_a_pr_waiting_for_a_person_is_merged_by_promoter_merge_once_its_gates_pass(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    config = local_config(gitops.path, tmp_path / "state", environments={"dev": "autoMerge: false"})
    with TestClient(Daemon(config).app) as client:
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        env = wait_for(lambda: (e := dev(client)).get("pullRequest") and e, what="dev's PR")
        early = client.post("/api/v1/strategies/guestbook/merge", json={"environment": "dev"})
        assert early.status_code == 409 and "not every gate passes" in early.text
        head = env["proposed"]["hydratedSha"]
        client.post(
            f"/api/v1/repositories/gitops/commits/{head}/statuses",
            json={"key": "ci", "phase": "success"},
        )
        wait_for(lambda: dev(client)["state"] == "ready", what="dev ready for a person")
        merged = client.post("/api/v1/strategies/guestbook/merge", json={"environment": "dev"})
        assert merged.status_code == 200, merged.text
        assert merged.json() == {
            "merged": env["pullRequest"]["number"],
            "environment": DEV,
            "drySha": change,
            "revert": False,
        }
        assert git(gitops.path, "rev-parse", f"{DEV}^2") == head
        wait_for(lambda: dev(client)["active"]["drySha"] == change, what="dev promoted")


def test_a_manual_revert_pr_is_merged_by_promoter_merge(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    runtime = Daemon(local_config(gitops.path, tmp_path / "state")).runtime
    mirror = runtime.mirrors.fresh(runtime.config.repository("gitops"))
    first, healthy_tip = git(gitops.path, "rev-parse", "main"), gitops.tip(DEV)
    record = HealthyRecord(
        dry_sha=first, hydrated_sha=healthy_tip, healthy_since=datetime(2026, 1, 1, tzinfo=UTC)
    )
    runtime.ledger.update(mirror, "guestbook", DEV, lambda led: led.with_healthy(record))
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    git(gitops.path, "update-ref", f"refs/heads/{DEV}", gitops.tip(f"{DEV}-next"))
    runtime.mirrors.invalidate("gitops")
    runtime.operations.revert("guestbook", DEV, to=None)  # autoMerge off: waits for a person
    answer = runtime.operations.merge("guestbook", "dev")
    assert answer.revert is True and answer.dry_sha == first
    tree = git(gitops.path, "rev-parse", f"{DEV}^{{tree}}")
    assert tree == git(gitops.path, "rev-parse", f"{healthy_tip}^{{tree}}")
    with pytest.raises(OperationError, match="no open pull request"):
        runtime.operations.merge("guestbook", "dev")


def test_a_revert_pr_merged_by_a_person_lands_in_git_titled_as_the_revert(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    runtime = Daemon(local_config(gitops.path, tmp_path / "state")).runtime
    mirror = runtime.mirrors.fresh(runtime.config.repository("gitops"))
    first, healthy_tip = git(gitops.path, "rev-parse", "main"), gitops.tip(DEV)
    record = HealthyRecord(
        dry_sha=first, hydrated_sha=healthy_tip, healthy_since=datetime(2026, 1, 1, tzinfo=UTC)
    )
    runtime.ledger.update(mirror, "guestbook", DEV, lambda led: led.with_healthy(record))
    bad = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    git(gitops.path, "update-ref", f"refs/heads/{DEV}", gitops.tip(f"{DEV}-next"))
    runtime.mirrors.invalidate("gitops")
    runtime.operations.revert("guestbook", DEV, to=None)  # autoMerge off: waits for a person
    answer = runtime.operations.merge("guestbook", "dev", by="ada")
    assert answer.revert is True
    message = git(gitops.path, "log", "-1", "--format=%B", DEV).strip()
    assert message == (
        f"Revert {DEV} to {first[:7]} (#{answer.merged})\n\n"
        f"Merged by promoter for guestbook: reverts {bad[:7]}.\nAsked for by ada."
    )
