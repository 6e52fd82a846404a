"""The dashboard shows a write refused for an ambiguous environment name with the branches
it could mean: on the audit page, as the answer of the refused write."""

from __future__ import annotations

from html import escape
from pathlib import Path

from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, TEAMS, GitOpsRepo, local_config, teams_strategy, wait_for


def test_the_audit_page_shows_the_refusal_naming_both_branches(tmp_path: Path) -> None:
    gitops = GitOpsRepo.create(tmp_path, [*ENVIRONMENTS, *TEAMS])
    config = local_config(gitops.path, tmp_path / "state", extra_strategy=teams_strategy())
    with TestClient(Daemon(config).app, base_url="http://127.0.0.1") as client:
        body = {"environment": "prod", "reason": "bad build"}
        assert client.post("/api/v1/strategies/teams/hold", json=body).status_code == 409

        def page() -> str | None:
            params = {"action": "hold", "strategy": "teams"}
            text = client.get("/audit", params=params, headers={"accept": "text/html"}).text
            return text if "409" in text else None

        text = wait_for(page, what="the refusal on the audit page")
    refusal = "409 'prod' names 2 environments of teams (team-a/prod, team-b/prod)"
    assert escape(refusal) in text
