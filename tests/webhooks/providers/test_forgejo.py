"""Forgejo / Gitea deliveries through the real receiver: signatures, and the events they mean.

The pull-request and push bodies are genuine (tests/fixtures/forgejo, see its README).
No genuine ``status`` delivery was found; that one is built here from the field names
of Gitea's ``CommitStatusPayload`` struct and is not presented as genuine.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from promoter.config import parse_config
from promoter.models import Phase
from promoter.state import ShaIndex, StatusCache
from webhooks import build_routes
from webhooks.verify import ForgejoSignature

HOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "forgejo" / "webhooks"
SECRET_ENV, SECRET = "PROMOTER_TEST_FORGEJO_HOOK", "forgejo-hook-secret"
SHA = "4522cbcefc20728a5b72b3a86af35e608622c514"


def config_text(state: Path) -> str:
    return f"""
scmProviders:
  - name: forgejo
    plugin: {{name: forgejo, settings: {{url: "https://try.gitea.io"}}}}
repositories:
  - name: test
    url: https://try.gitea.io/kostekIV/test.git
    scmProvider: forgejo
  - name: hello
    url: http://try.gitea.io/gogits/hello-world.git
    scmProvider: forgejo
promotionStrategies:
  - name: kt
    repository: test
    environments: [{{branch: master}}]
  - name: hello
    repository: hello
    dryBranch: master
    environments: [{{branch: environment/dev}}]
webhooks:
  forgejo: {{secrets: [{{fromEnv: {SECRET_ENV}}}]}}
daemon: {{stateDir: {state}}}
"""


class App:
    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(SECRET_ENV, SECRET)
        self.enqueued: list[str] = []
        self.cache = StatusCache()
        routes = build_routes(
            config=parse_config(config_text(tmp_path)),
            enqueue=self.enqueued.extend,
            status_cache=self.cache,
            sha_index=ShaIndex(),
            state_dir=tmp_path,
        )
        self.routes = routes
        self.client = TestClient(Starlette(routes=routes))

    def deliver(
        self, event: str, body: dict[str, Any], *, header: str = "X-Forgejo", secret: str = SECRET
    ) -> Any:
        raw = json.dumps(body).encode()
        return self.client.post(
            "/webhooks/forgejo",
            content=raw,
            headers={
                f"{header}-Event": event,
                f"{header}-Delivery": str(uuid.uuid4()),
                f"{header}-Signature": ForgejoSignature.sign(secret, raw),
                "Content-Type": "application/json",
            },
        )


@pytest.fixture
def app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    made = App(tmp_path, monkeypatch)
    yield made
    made.client.close()
    made.routes.close()


def genuine(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((HOOKS / name).read_text())
    return data


def test_a_gitea_pull_request_delivery_wakes_the_strategy_of_its_branches(app: App) -> None:
    response = app.deliver(
        "pull_request", genuine("gitea-pull_request-opened.json"), header="X-Gitea"
    )
    assert response.status_code == 202, response.text
    assert app.enqueued == ["kt"]


def test_a_forgejo_push_to_a_watched_branch_wakes_the_strategy(app: App) -> None:
    response = app.deliver("push", genuine("gitea-push.json"))
    assert response.status_code == 202, response.text
    assert app.enqueued == ["hello"]


def test_a_push_that_brought_its_tip_makes_it_known_as_a_commit_with_no_statuses(
    app: App,
) -> None:
    """Its statuses can only come later, by a status delivery: nothing to read from Forgejo."""
    push = genuine("gitea-push.json")  # its after is among its commits
    assert app.deliver("push", push).status_code == 202
    assert app.cache.get("hello", push["after"]) == []
    other = "0123456789abcdef0123456789abcdef01234567"
    moved = {**push, "after": other}  # a tip the push did not bring (a branch moved back)
    assert app.deliver("push", moved).status_code == 202
    assert app.cache.get("hello", other) is None


def test_a_status_delivery_updates_the_status_cache(app: App) -> None:
    body = {  # built from Gitea's CommitStatusPayload field names, not a genuine delivery
        "id": 7,
        "sha": SHA,
        "context": "ci",
        "state": "success",
        "description": "ok",
        "target_url": "https://ci.example.invalid/7",
        "created_at": "2024-05-01T10:00:00Z",
        "updated_at": "2024-05-01T10:00:00Z",
        "repository": genuine("gitea-push.json")["repository"],
    }
    app.cache.store("hello", SHA, [])  # the reconciler had read the commit's statuses
    response = app.deliver("status", body)
    assert response.status_code == 202, response.text
    assert app.enqueued == ["hello"]
    cached = app.cache.get("hello", SHA)
    assert cached is not None
    assert [(s.key, s.phase) for s in cached] == [("ci", Phase.SUCCESS)]


def test_a_delivery_signed_with_another_secret_is_refused(app: App) -> None:
    response = app.deliver("push", genuine("gitea-push.json"), secret="wrong")
    assert response.status_code == 401
    assert app.enqueued == []


def test_an_event_the_promoter_has_no_use_for_is_ignored(app: App) -> None:
    body = genuine("forgejo-pull_request-opened.json")
    response = app.deliver("issues", body)
    assert response.status_code in (200, 202)
    assert app.enqueued == []
