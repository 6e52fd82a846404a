"""Pinning through the API on the local SCM: prod stays put until it is unpinned."""

from __future__ import annotations

from pathlib import Path

from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.e2e.test_gates import to_staging
from tests.e2e.test_local_promotion import active_dry, env_view, set_status, wait_state
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for


def test_a_pinned_prod_keeps_its_commit_until_unpinned(gitops: GitOpsRepo, tmp_path: Path) -> None:
    daemon = Daemon(local_config(gitops.path, tmp_path / "state"))
    with TestClient(daemon.app) as client:
        wait_state(client, "environment/prod", "up-to-date")
        for branch in ENVIRONMENTS:
            set_status(client, gitops.tip(branch), "health")
        running = active_dry(client, "environment/prod")
        assert running is not None
        pinned = client.post(
            "/api/v1/strategies/guestbook/pin",
            json={"environment": "prod", "drySha": running[:7], "reason": "audit week"},
        )
        assert pinned.status_code == 200, pinned.text
        assert pinned.json()["pinned"] == running
        change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        to_staging(client, gitops, change)
        prod = wait_for(
            lambda: "pinned to" in (e := env_view(client, "environment/prod"))["reason"] and e,
            what="prod to say it is pinned",
        )
        assert "audit week" in prod["reason"]
        checks = {s["key"]: s["phase"] for s in prod["proposed"]["commitStatuses"]}
        assert checks["promoter/pin"] == "failure"
        assert active_dry(client, "environment/prod") == running
        unpinned = client.post("/api/v1/strategies/guestbook/unpin", json={"environment": "prod"})
        assert unpinned.status_code == 200, unpinned.text
        wait_for(lambda: active_dry(client, "environment/prod") == change, what="prod to move on")
        again = client.post("/api/v1/strategies/guestbook/unpin", json={"environment": "prod"})
        assert again.status_code == 409 and "not pinned" in again.json()["error"]
