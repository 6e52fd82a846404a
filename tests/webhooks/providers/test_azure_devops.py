"""Azure DevOps service hooks through the real receiver: who may deliver, and what it means.

Azure signs nothing: a delivery proves itself by the basic auth and/or the header its
subscription sends. The bodies are genuine (tests/fixtures/azure-devops, see its README);
where a test needs today's fields the captures lack (``notificationId``), or a push of
several refs, it fills them into a copy and says so.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from promoter.config import parse_config
from promoter.errors import ConfigError
from promoter.models import PullRequest, PullRequestState
from promoter.state import ShaIndex, StatusCache
from promoter.state.pulls import MISSING, PullRequestCache
from webhooks import build_routes
from webhooks.providers.azure_devops import ServiceHookAuth

HOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "azure-devops" / "webhooks"
PASSWORD_ENV, PASSWORD = "PROMOTER_TEST_AZURE_HOOK_PASSWORD", "hook-password-0123"
OLD_ENV, OLD = "PROMOTER_TEST_AZURE_HOOK_OLD", "hook-password-old"
TOKEN_ENV, TOKEN = "PROMOTER_TEST_AZURE_HOOK_TOKEN", "hook-header-token-0123"
PUSH_URL = "https://dev.azure.com/fabrikam-fiber-inc/DefaultCollection/_git/Fabrikam-Fiber-Git"
PR_URL = "https://dev.azure.com/fabrikam/DefaultCollection/_git/Fabrikam"


def config_text(state: Path, hooks: str) -> str:
    return f"""
scmProviders:
  - name: azure
    azureDevOps: {{organization: fabrikam, token: {{fromEnv: PROMOTER_TEST_UNUSED}}}}
repositories:
  - name: fiber
    url: {PUSH_URL}
    scmProvider: azure
  - name: fabrikam
    url: {PR_URL}
    scmProvider: azure
promotionStrategies:
  - name: fiber
    repository: fiber
    dryBranch: master
    environments: [{{branch: environment/dev}}]
  - name: fabrikam
    repository: fabrikam
    environments: [{{branch: master}}]
webhooks:
  azureDevOps: {hooks}
daemon: {{stateDir: {state}}}
"""


BASIC_AND_HEADER = (
    "{username: azure, passwords: [{fromEnv: "
    + PASSWORD_ENV
    + "}, {fromEnv: "
    + OLD_ENV
    + "}], header: X-Promoter-Token, tokens: [{fromEnv: "
    + TOKEN_ENV
    + "}]}"
)


class App:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hooks: str) -> None:
        for name, value in ((PASSWORD_ENV, PASSWORD), (OLD_ENV, OLD), (TOKEN_ENV, TOKEN)):
            monkeypatch.setenv(name, value)
        self.enqueued: list[str] = []
        self.cache = StatusCache()
        self.pulls = PullRequestCache(max_age=60.0)
        self.routes = build_routes(
            config=parse_config(config_text(tmp_path, hooks)),
            enqueue=self.enqueued.extend,
            status_cache=self.cache,
            sha_index=ShaIndex(),
            state_dir=tmp_path,
            pr_cache=self.pulls,
        )
        self.client = TestClient(Starlette(routes=self.routes))

    def deliver(
        self,
        body: dict[str, Any],
        *,
        user: str = "azure",
        password: str | None = PASSWORD,
        token: str | None = TOKEN,
    ) -> Any:
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if password is not None:
            basic = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {basic}"
        if token is not None:
            headers["X-Promoter-Token"] = token
        return self.client.post("/webhooks/azure-devops", content=json.dumps(body), headers=headers)


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    made = App(tmp_path, monkeypatch, BASIC_AND_HEADER)
    yield made
    made.client.close()
    made.routes.close()


def genuine(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HOOKS / name).read_text())
    return data


# --- who may deliver ------------------------------------------------------------------


def test_a_delivery_without_credentials_is_refused(app: App) -> None:
    response = app.deliver(genuine("push.json"), password=None, token=None)
    assert response.status_code == 401
    assert app.enqueued == []


@pytest.mark.parametrize(
    ("user", "password", "token"),
    [
        ("azure", "wrong", TOKEN),  # a forged password
        ("mallory", PASSWORD, TOKEN),  # another user name
        ("azure", PASSWORD, None),  # the header left out
        ("azure", PASSWORD, "wrong"),  # a forged header
        ("azure", None, TOKEN),  # the basic auth left out
        ("azure", "", TOKEN),  # an empty password
    ],
)
def test_a_forged_delivery_is_refused_and_wakes_nothing(
    app: App, user: str, password: str | None, token: str | None
) -> None:
    response = app.deliver(genuine("push.json"), user=user, password=password, token=token)
    assert response.status_code == 401
    assert app.enqueued == []


def test_a_receiver_configured_with_no_secret_refuses_every_delivery(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = App(tmp_path, monkeypatch, "{}")
    try:
        response = made.deliver(genuine("push.json"))
        assert response.status_code == 401
        assert made.enqueued == []
    finally:
        made.client.close()
        made.routes.close()


def test_an_empty_secret_is_refused_at_start() -> None:
    with pytest.raises(ConfigError):
        ServiceHookAuth(username=None, passwords=[" "], header=None, tokens=[])


def test_the_old_password_is_accepted_beside_the_new_one_while_rotating(app: App) -> None:
    assert app.deliver(genuine("push.json"), password=OLD).status_code == 202
    other = {**genuine("push.json"), "id": "7d3c2c2a-0000-4000-8000-000000000001"}
    assert app.deliver(other, password=PASSWORD).status_code == 202
    assert app.enqueued == ["fiber", "fiber"]


def test_basic_auth_alone_is_enough_when_no_header_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = App(tmp_path, monkeypatch, "{passwords: [{fromEnv: " + PASSWORD_ENV + "}]}")
    try:
        assert made.deliver(genuine("push.json"), user="", token=None).status_code == 202
        assert made.deliver(genuine("push.json"), password="no", token=None).status_code == 401
    finally:
        made.client.close()
        made.routes.close()


# --- what a delivery means ------------------------------------------------------------


def test_a_body_without_its_resource_is_invalid(app: App) -> None:
    body = genuine("push.json")
    del body["resource"]
    response = app.deliver(body)
    assert response.status_code == 400
    assert app.enqueued == []


def test_a_genuine_push_wakes_the_strategy_of_its_branch_and_marks_its_new_commit(
    app: App,
) -> None:
    push = genuine("push.json")  # refs/heads/master to 33b55f7c, a commit the push brought
    response = app.deliver(push)
    assert response.status_code == 202, response.text
    assert app.enqueued == ["fiber"]
    assert app.cache.get("fiber", "33b55f7cb7e7e245323987634f960cf4a6e6bc74") == []


def test_a_retried_delivery_is_answered_as_a_duplicate_and_wakes_nothing_more(app: App) -> None:
    assert app.deliver(genuine("push.json")).status_code == 202
    again = app.deliver(genuine("push.json"))
    assert (again.status_code, again.json()) == (202, {"result": "duplicate"})
    assert app.enqueued == ["fiber"]


def test_a_delivery_without_an_event_id_is_told_apart_by_its_notification(app: App) -> None:
    body = genuine("push.json")  # today's fields, filled into a copy of the capture
    del body["id"]
    body.update(subscriptionId="00000000-0000-0000-0000-000000000000", notificationId=3)
    assert app.deliver(body).status_code == 202
    assert app.deliver(body).json() == {"result": "duplicate"}
    assert app.deliver({**body, "notificationId": 4}).status_code == 202
    assert app.enqueued == ["fiber", "fiber"]


def test_a_push_of_several_refs_wakes_the_strategies_of_every_one(app: App) -> None:
    body = genuine("push.json")  # a push of two refs: refUpdates filled into a copy
    update = body["resource"]["refUpdates"][0]
    body["resource"]["refUpdates"] = [
        {**update, "name": "refs/heads/feature"},
        {**update, "name": "refs/heads/environment/dev"},
    ]
    assert app.deliver(body).status_code == 202
    assert app.enqueued == ["fiber"]


def test_a_completed_pull_request_wakes_its_strategy_and_ends_what_was_cached_of_it(
    app: App,
) -> None:
    merged = genuine("pr_merged.json")  # status completed: mytopic into master
    response = app.deliver(merged)
    assert response.status_code == 202, response.text
    assert app.enqueued == ["fabrikam"]


def test_a_created_pull_request_wakes_the_strategy_of_its_base(app: App) -> None:
    assert app.deliver(genuine("pr_created.json")).status_code == 202
    assert app.deliver(genuine("pr_updated.json")).status_code == 202
    assert app.enqueued == ["fabrikam", "fabrikam"]


def test_a_comment_is_an_event_the_promoter_has_no_use_for(app: App) -> None:
    response = app.deliver(genuine("issue_comment.json"))
    assert response.status_code == 202
    assert response.json()["result"] == "ignored"
    assert app.enqueued == []


def test_the_hook_of_a_pull_request_the_promoter_opened_keeps_it_known(app: App) -> None:
    created = genuine("pr_created.json")  # #1, mytopic into master, head 53d54ac9
    key = ("fabrikam", "mytopic", "master")
    known = PullRequest(
        id="1",
        number=1,
        head_branch="mytopic",
        base_branch="master",
        head_sha="53d54ac915144006c2c9e90d2c7d3880920db49c",
        state=PullRequestState.OPEN,
    )
    app.pulls.put(key, known)
    assert app.deliver(created).status_code == 202
    assert app.pulls.get(key) == known  # no read of what the promoter knows already
    moved = genuine("pr_created.json")  # opened at another head (filled in): read again
    moved["id"] = "2ab4e3d3-0000-4000-8000-000000000002"
    moved["resource"]["lastMergeSourceCommit"]["commitId"] = "1" * 40
    assert app.deliver(moved).status_code == 202
    assert app.pulls.get(key) is MISSING
    app.pulls.put(key, known)
    attempted = genuine("pr_merged.json")  # Azure made its merge commit: still active
    attempted["resource"]["status"] = "active"
    assert app.deliver(attempted).status_code == 202
    assert app.pulls.get(key) == known
    assert app.deliver(genuine("pr_updated.json")).status_code == 202  # completed
    assert app.pulls.get(key) is None  # none open now
