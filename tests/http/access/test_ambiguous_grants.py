"""A grant scoped to one of two environments whose branches share their last part does not
let that last part act on the first of them: the caller with the role somewhere in the
strategy is answered 409 with both branches, one without it 403 (and learns no branch);
the whole branch is allowed or refused by the grant as ever."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.people import access_yaml, bearer
from tests.support import ENVIRONMENTS, TEAMS, GitOpsRepo, local_config, teams_strategy, wait_for

TEAM_A, TEAM_B = TEAMS
OPS = "/api/v1/strategies/teams/"
PEOPLE = {
    "tia": [f"role: operator, environments: [{TEAM_A}]"],
    "tob": [f"role: operator, environments: [{TEAM_B}]"],
    "sam": ["role: operator, strategies: [guestbook]"],
    "ada": ["role: admin, strategies: [teams]"],
    "vic": ["role: viewer"],
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    root = tmp_path_factory.mktemp("grants")
    gitops = GitOpsRepo.create(root, [*ENVIRONMENTS, *TEAMS])
    config = local_config(
        gitops.path,
        root / "state",
        extra_strategy=teams_strategy(),
        access=access_yaml(root / "tokens", PEOPLE),
    )
    with TestClient(Daemon(config).app, base_url="http://127.0.0.1") as client:
        wait_for(lambda: holds(client) is not None, what="a first reconcile")
        yield client


def holds(client: TestClient) -> dict[str, list[Any]] | None:
    view = client.get(OPS.rstrip("/"), headers=bearer("vic")).json()
    if not view["environments"][0].get("proposed"):
        return None
    return {env["branch"]: env["holds"] for env in view["environments"]}


def hold(client: TestClient, who: str, environment: str) -> Any:
    body = {"environment": environment, "reason": "bad build"}
    return client.post(OPS + "hold", json=body, headers=bearer(who))


@pytest.mark.parametrize("who", ["tia", "tob", "ada"])
def test_a_caller_with_the_role_on_either_branch_is_answered_409_with_both(
    client: TestClient, who: str
) -> None:
    before = holds(client)
    answer = hold(client, who, "prod")
    assert answer.status_code == 409, answer.text
    assert answer.json()["candidates"] == [TEAM_A, TEAM_B]
    client.post("/api/v1/refresh", json={"strategy": "teams"}, headers=bearer("ada"))
    assert holds(client) == before


def test_a_caller_without_the_role_in_the_strategy_is_refused_and_told_no_branch(
    client: TestClient,
) -> None:
    answer = hold(client, "sam", "prod")
    assert answer.status_code == 403
    assert answer.json() == {"error": "sam needs the operator role on teams"}
    answer = hold(client, "vic", "prod")
    assert answer.status_code == 403
    assert "candidates" not in answer.json()


def test_a_freeze_of_the_shared_last_part_by_an_admin_of_the_strategy_is_answered_409(
    client: TestClient,
) -> None:
    body = {"strategy": "teams", "environment": "prod", "reason": "release week"}
    answer = client.post("/api/v1/freeze", json=body, headers=bearer("ada"))
    assert answer.status_code == 409, answer.text
    assert answer.json()["candidates"] == [TEAM_A, TEAM_B]
    assert client.post("/api/v1/freeze", json=body, headers=bearer("tia")).status_code == 403


def test_the_whole_branch_is_allowed_or_refused_by_the_grant(client: TestClient) -> None:
    assert hold(client, "tob", TEAM_A).status_code == 403
    answer = hold(client, "tob", TEAM_B)
    assert answer.status_code == 200, answer.text
    assert answer.json()["environments"] == [TEAM_B]
    released = client.post(OPS + "release", json={"environment": TEAM_B}, headers=bearer("tob"))
    assert released.status_code == 200, released.text
