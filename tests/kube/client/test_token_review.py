"""Kubernetes mode names callers by a TokenReview of their bearer token: the API server's
user and groups are the caller, grants give them roles; a token it does not know, or a
review that fails, names nobody (401). A fake API server answers over real HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from promoter.http import ThreadServer, free_port
from promoter.kube.client.api import Kube
from promoter.kube.client.connect import loopback_client
from promoter.kube.client.token_review import TokenReviewer
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

CI = "system:serviceaccount:ci:deployer"


class FakeAuthentication:
    """``POST /apis/authentication.k8s.io/v1/tokenreviews`` as an API server answers it."""

    def __init__(self) -> None:
        self.users = {"sa-token": (CI, ["system:serviceaccounts", "system:serviceaccounts:ci"])}
        self.reviews: list[dict[str, Any]] = []
        self.broken = False
        self.app = Starlette(
            routes=[
                Route("/apis/authentication.k8s.io/v1/tokenreviews", self.review, methods=["POST"])
            ]
        )

    async def review(self, request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        self.reviews.append(body)
        if self.broken:
            return JSONResponse({"kind": "Status", "code": 500}, status_code=500)
        found = self.users.get(body["spec"]["token"])
        status: dict[str, Any] = {"authenticated": found is not None}
        if found is not None:
            status["user"] = {"username": found[0], "groups": found[1]}
        return JSONResponse({**body, "status": status}, status_code=201)


@pytest.fixture
def api_server() -> Iterator[tuple[FakeAuthentication, Kube]]:
    fake = FakeAuthentication()
    port = free_port()
    server = ThreadServer(fake.app, port, name="fake-apiserver").start()
    yield fake, Kube(loopback_client(f"http://127.0.0.1:{port}"))
    server.stop()


def test_a_reviewed_token_is_its_user_with_its_groups(
    api_server: tuple[FakeAuthentication, Kube],
) -> None:
    fake, kube = api_server
    who = TokenReviewer(kube, audiences=["promoter"])("sa-token")
    assert who is not None
    assert (who.name, who.via, who.groups) == (
        CI,
        "kubernetes",
        ("system:serviceaccounts", "system:serviceaccounts:ci"),
    )
    assert fake.reviews[-1]["spec"] == {"token": "sa-token", "audiences": ["promoter"]}


def test_an_unknown_token_or_a_failed_review_names_nobody(
    api_server: tuple[FakeAuthentication, Kube],
) -> None:
    fake, kube = api_server
    reviewer = TokenReviewer(kube)
    assert reviewer("forged") is None
    fake.broken = True
    assert reviewer("sa-token") is None


def test_a_service_account_acts_by_its_group_grant(
    api_server: tuple[FakeAuthentication, Kube], tmp_path: Path
) -> None:
    fake, kube = api_server
    gitops = GitOpsRepo.create(tmp_path)
    access = (
        "  kubernetes: {tokenReview: true}\n"
        "  grants: [{groups: ['system:serviceaccounts:ci'], role: operator}]"
    )
    config = local_config(gitops.path, tmp_path / "state", access=access)
    daemon = Daemon(config, review=TokenReviewer(kube))
    with TestClient(daemon.app) as client:
        sa = {"authorization": "Bearer sa-token"}
        wait_for(
            lambda: client.get("/api/v1/strategies/guestbook", headers=sa).json()["reconciledAt"],
            what="a first reconcile",
        )
        held = client.post(
            "/api/v1/strategies/guestbook/hold",
            json={"environment": "dev", "reason": "deploy freeze"},
            headers=sa,
        )
        assert held.status_code == 200, held.text
        forged = {"authorization": "Bearer forged"}
        assert client.get("/api/v1/strategies", headers=forged).status_code == 401
        reviews = len(fake.reviews)
        for _ in range(3):  # a token's review is kept a minute
            assert client.get("/api/v1/whoami", headers=sa).json()["name"] == CI
        assert len(fake.reviews) == reviews
        entry = client.get("/api/v1/audit", params={"action": "hold"}, headers=sa).json()
        assert (entry["entries"][0]["who"], entry["entries"][0]["via"]) == (CI, "kubernetes")
