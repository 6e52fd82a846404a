"""A slow plugin shows: the strategy says what it waits on, the metrics time every call."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from promoter.config import parse_config
from promoter.metrics import sample
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, wait_for

MISBEHAVING = [sys.executable, str(Path(__file__).with_name("misbehaving.py"))]
SLOW = "commitStatuses/get"


def config_text(repo: Path, state: Path) -> str:
    return f"""
scmProviders:
  - name: slowscm
    plugin:
      command: {MISBEHAVING}
      settings: {{delay: 2.5, slow: ["{SLOW}"]}}
repositories:
  - name: gitops
    url: {repo}
    scmProvider: slowscm
promotionStrategies:
  - name: guestbook
    repository: gitops
    environments:
      - {{branch: environment/dev}}
daemon:
  stateDir: {state}
  resyncInterval: 1h
  workers: 1
"""


def detail(client: TestClient) -> dict[str, Any]:
    response = client.get("/api/v1/strategies/guestbook").json()
    assert isinstance(response, dict)
    return response


def timed(name: str) -> float:
    labels = {"provider": "slowscm", "operation": "get_commit_statuses"}
    return sample(f"promoter_scm_call_duration_seconds_{name}", labels)


def test_a_strategy_waiting_on_a_slow_plugin_says_so_and_every_call_is_timed(
    tmp_path: Path,
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    before = timed("count"), timed("sum")
    daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state")))
    with TestClient(daemon.app) as client:
        # One answer read whole: the reason counts the seconds the call has taken so far.
        seen = wait_for(
            lambda: "slow SCM call" in (d := detail(client))["environments"][0]["reason"] and d,
            what="the status to name the slow call",
        )
        reason = seen["environments"][0]["reason"]
        assert "slowscm get_commit_statuses" in reason
        assert seen["waiting"] == reason
        wait_for(lambda: detail(client)["reconciledAt"], what="the reconcile to end")
        assert detail(client)["waiting"] is None
        assert detail(client)["environments"][0]["state"] == "up-to-date"
    assert timed("count") >= before[0] + 1
    assert timed("sum") >= before[1] + 2.5
