"""A staged rollout end to end on the local SCM: qa, then two bronze, three silver, gold."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from tests.e2e.test_local_promotion import set_status
from tests.support import GitOpsRepo, wait_for

QA = "environment/qa"
BRONZE = ["environment/bronze-1", "environment/bronze-2"]
SILVER = ["environment/silver-1", "environment/silver-2", "environment/silver-3"]
GOLD = "environment/gold"
ALL = [QA, *BRONZE, *SILVER, GOLD]
REVERT = "autoRevert: {enabled: true, settleTime: 0.2s, autoMerge: true}"


def config(repo: Path, state: Path) -> str:
    environments = "\n".join(
        f"      - {{branch: {b}{', ' + REVERT if b in BRONZE else ''}}}" for b in ALL
    )
    return f"""\
scmProviders: [{{name: local, local: {{}}}}]
repositories: [{{name: gitops, url: {repo}, scmProvider: local}}]
promotionStrategies:
  - name: fleet
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    environments:
{environments}
    tiers:
      - {{name: qa, environments: [{QA}]}}
      - {{name: bronze, environments: [{", ".join(BRONZE)}]}}
      - {{name: silver, environments: [{", ".join(SILVER)}], maxParallel: 2}}
      - {{name: gold, environments: [{GOLD}]}}
daemon:
  stateDir: {state}
  pollInterval: 0.1s
  resyncInterval: 30s
  workers: 2
"""


def envs(client: TestClient) -> dict[str, dict[str, Any]]:
    view = client.get("/api/v1/strategies/fleet").json()
    return {e["branch"]: e for e in view["environments"]}


def dry(client: TestClient, branch: str) -> str | None:
    return (envs(client)[branch].get("active") or {}).get("drySha")


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[TestClient, GitOpsRepo]]:
    gitops = GitOpsRepo.create(tmp_path, environments=ALL)
    daemon = Daemon(parse_config(config(gitops.path, tmp_path / "state")))
    with TestClient(daemon.app) as client:
        wait_for(lambda: all(e["state"] == "up-to-date" for e in envs(client).values()))
        for branch in ALL:
            set_status(client, gitops.tip(branch), "health")
        yield client, gitops


def healthy(client: TestClient, gitops: GitOpsRepo, *branches: str, phase: str = "success") -> None:
    for branch in branches:
        set_status(client, gitops.tip(branch), "health", phase)


def test_a_change_rolls_out_in_waves_and_a_bad_one_stops_at_the_tier_that_failed(
    fleet: tuple[TestClient, GitOpsRepo],
) -> None:
    client, gitops = fleet
    good = gitops.change("1.1.0", "Bump to 1.1.0", ALL)

    wait_for(lambda: dry(client, QA) == good, what="qa")
    assert all(dry(client, b) != good for b in [*BRONZE, *SILVER, GOLD])
    healthy(client, gitops, QA)
    wait_for(lambda: all(dry(client, b) == good for b in BRONZE), what="both bronze, in parallel")
    assert all(dry(client, b) != good for b in SILVER)
    healthy(client, gitops, *BRONZE)

    # silver may promote two at a time: the third waits for one of them to be healthy
    wait_for(lambda: sum(dry(client, b) == good for b in SILVER) == 2, what="two silver")
    third = next(b for b in SILVER if dry(client, b) != good)
    waiting = wait_for(
        lambda: (
            "tier silver already promotes 2" in envs(client)[third]["reason"]
            and envs(client)[third]
        ),
        what="the third silver to wait",
    )
    assert dry(client, third) != good and waiting["state"] == "blocked"
    assert dry(client, GOLD) != good
    healthy(client, gitops, *[b for b in SILVER if b != third])
    wait_for(lambda: dry(client, third) == good, what="the third silver")
    healthy(client, gitops, third)
    wait_for(lambda: dry(client, GOLD) == good, what="gold")
    healthy(client, gitops, GOLD)

    bad = gitops.change("1.2.0", "Bump to 1.2.0", ALL)
    wait_for(lambda: dry(client, QA) == bad, what="qa on the bad change")
    healthy(client, gitops, QA)
    wait_for(lambda: all(dry(client, b) == bad for b in BRONZE), what="bronze on the bad change")
    healthy(client, gitops, BRONZE[1])
    healthy(client, gitops, BRONZE[0], phase="failure")
    wait_for(lambda: dry(client, BRONZE[0]) == good, timeout=30, what="bronze-1 reverted")
    assert dry(client, BRONZE[1]) == bad  # the healthy bronze keeps the change

    silver = envs(client)[SILVER[0]]
    assert silver["state"] == "blocked"
    assert "waiting for all of environment/bronze-1, environment/bronze-2" in silver["reason"]
    holds = {h["drySha"] for b in [*SILVER, GOLD] for h in envs(client)[b].get("holds") or []}
    assert holds == {bad}  # held in every environment downstream of bronze-1
    assert all(dry(client, b) == good for b in [*SILVER, GOLD])


def test_status_draws_the_waves(fleet: tuple[TestClient, GitOpsRepo]) -> None:
    from promoter.cli.status_table import render

    client, _ = fleet
    view = client.get("/api/v1/strategies/fleet").json()
    text = render([view])
    assert "fleet: qa -> {bronze-1, bronze-2} -> {silver-1, silver-2, silver-3} (2 at once)" in text
    assert text.rstrip().endswith("-> gold")


def test_the_dashboard_draws_the_waves_with_each_environments_state(
    fleet: tuple[TestClient, GitOpsRepo],
) -> None:
    client, _ = fleet
    page = client.get("/dashboard/fleet", headers={"Accept": "text/html"})
    assert page.status_code == 200
    text = page.text
    assert "<h2>Rollout</h2>" in text
    waves = text[
        text.index('<ol class="waves"') : text.index("</ol>", text.index('<ol class="waves"'))
    ]
    assert [w for w in ("qa", "bronze", "silver", "gold") if f"<strong>{w}</strong>" in waves] == [
        "qa",
        "bronze",
        "silver",
        "gold",
    ]
    assert "2 at once" in waves and "bronze-1" in waves and "up-to-date" in waves
