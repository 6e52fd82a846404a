"""An environment named by a last part two branches share (``prod`` of ``team-a/prod`` and
``team-b/prod``) is answered 409 with both branches, by every operation and by the freeze
routes, and nothing is done to either; the whole branch still names one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config import STRATEGY_OPERATIONS
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, TEAMS, GitOpsRepo, local_config, teams_strategy, wait_for

TEAM_A, TEAM_B = TEAMS
OPS = "/api/v1/strategies/teams/"
REFUSED = "'prod' names 2 environments of teams (team-a/prod, team-b/prod): give the whole branch"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("names")
    gitops = GitOpsRepo.create(root, [*ENVIRONMENTS, *TEAMS])
    config = local_config(gitops.path, root / "state", extra_strategy=teams_strategy())
    with TestClient(Daemon(config).app, base_url="http://127.0.0.1") as client:
        wait_for(lambda: environments(client)[0].get("proposed"), what="a first reconcile")
        yield client


def environments(client: TestClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.get(OPS.rstrip("/")).json()["environments"]
    return found


def holds(client: TestClient) -> dict[str, list[Any]]:
    return {env["branch"]: env["holds"] for env in environments(client)}


@pytest.mark.parametrize("operation", [op for op in STRATEGY_OPERATIONS if op != "approve-change"])
def test_every_operation_answers_409_with_both_branches_for_a_shared_last_part(
    client: TestClient, operation: str
) -> None:
    before = holds(client)
    body = {"environment": "prod", "reason": "r", "drySha": "a" * 40}
    answer = client.post(OPS + operation, json=body)
    assert (answer.status_code, answer.json()) == (
        409,
        {"error": REFUSED, "candidates": [TEAM_A, TEAM_B]},
    )
    client.post("/api/v1/refresh", json={"strategy": "teams"})
    assert holds(client) == before
    assert [env["pin"] for env in environments(client)] == [None, None]


def test_a_hold_on_the_whole_branch_holds_that_environment(client: TestClient) -> None:
    answer = client.post(OPS + "hold", json={"environment": TEAM_B, "reason": "bad build"})
    assert answer.status_code == 200, answer.text
    assert answer.json()["environments"] == [TEAM_B]
    wait_for(lambda: holds(client)[TEAM_B], what="the hold in the view")
    assert holds(client)[TEAM_A] == []
    assert client.post(OPS + "release", json={"environment": TEAM_B}).status_code == 200


def test_a_freeze_of_a_shared_last_part_is_answered_409_and_freezes_neither(
    client: TestClient,
) -> None:
    body = {"strategy": "teams", "environment": "prod", "reason": "release week"}
    answer = client.post("/api/v1/freeze", json=body)
    assert (answer.status_code, answer.json()) == (
        409,
        {"error": REFUSED, "candidates": [TEAM_A, TEAM_B]},
    )
    answer = client.post("/api/v1/unfreeze", json={"strategy": "teams", "environment": "prod"})
    assert answer.status_code == 409
    for branch in TEAMS:  # nothing to lift: neither was frozen
        lifted = client.post("/api/v1/unfreeze", json={"strategy": "teams", "environment": branch})
        assert lifted.status_code == 404, lifted.text


def test_a_freeze_of_the_whole_branch_freezes_that_environment(client: TestClient) -> None:
    body = {"strategy": "teams", "environment": TEAM_A, "reason": "release week"}
    answer = client.post("/api/v1/freeze", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["scope"] == f"{TEAM_A} of teams"
    lifted = client.post("/api/v1/unfreeze", json={"strategy": "teams", "environment": TEAM_A})
    assert lifted.status_code == 200, lifted.text


def test_the_refusal_is_in_the_audit_under_the_caller(client: TestClient) -> None:
    client.post(OPS + "pin", json={"environment": "prod", "drySha": "a" * 40, "reason": "r"})

    def entry() -> dict[str, Any] | None:
        params = {"action": "pin", "strategy": "teams", "limit": "1"}
        found = client.get("/api/v1/audit", params=params).json()["entries"]
        return found[0] if found else None

    found = wait_for(entry, what="the pin's audit entry")
    assert (found["outcome"], found["status"], found["environment"]) == ("failed", 409, "prod")
    assert found["message"] == REFUSED
