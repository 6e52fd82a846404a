"""The API refuses bodies past its cap (413) and text fields past their bounds (422)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.http.api import MAX_BODY, MAX_REASON
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

SHA = "a" * 40


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(Daemon(local_config(gitops.path, tmp_path / "state")).app) as client:
        wait_for(
            lambda: (
                client.get("/api/v1/strategies/guestbook").json()["environments"][0].get("active")
            ),
            what="a first reconcile",
        )
        yield client


def chunks(size: int) -> Iterator[bytes]:
    """A JSON body sent without Content-Length, in 64 KiB pieces."""
    yield b'{"environment": "staging", "reason": "'
    for _ in range(size // 65536):
        yield b"x" * 65536
    yield b'"}'


ROUTES = [
    "/api/v1/strategies/guestbook/hold",
    f"/api/v1/repositories/gitops/commits/{SHA}/statuses",
    "/api/v1/refresh",
]


@pytest.mark.parametrize("path", ROUTES)
def test_a_body_past_the_cap_is_refused_with_413(client: TestClient, path: str) -> None:
    body = json.dumps({"environment": "staging", "reason": "x" * (MAX_BODY + 1)})
    answer = client.post(path, content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 413
    assert str(MAX_BODY) in answer.json()["error"]


@pytest.mark.parametrize("path", ROUTES)
def test_a_streamed_body_without_length_is_cut_off_at_the_cap(
    client: TestClient, path: str
) -> None:
    answer = client.post(
        path, content=chunks(4 * MAX_BODY), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413


def test_a_reason_past_its_bound_never_reaches_the_ledger(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    reason = "r" * (MAX_REASON + 1)
    answer = client.post(
        "/api/v1/strategies/guestbook/hold", json={"environment": "staging", "reason": reason}
    )
    assert answer.status_code == 422
    assert reason not in answer.text
    assert answer.json()["details"][0]["loc"] == ["reason"]
    notes = git(gitops.path, "log", "--all", "--notes=*", "--format=%N")  # the ledger too
    assert "rrrrrrrrrr" not in notes
    held = client.post(
        "/api/v1/strategies/guestbook/hold",
        json={"environment": "staging", "reason": "r" * MAX_REASON},
    )
    assert held.status_code == 200


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/strategies/guestbook/hold", {"environment": "e" * 300, "reason": "freeze"}),
        ("/api/v1/strategies/guestbook/release", {"environment": "dev", "drySha": "f" * 65}),
        ("/api/v1/strategies/guestbook/revert", {"environment": "dev", "to": "f" * 65}),
        ("/api/v1/refresh", {"strategy": "s" * 300}),
        (
            f"/api/v1/repositories/gitops/commits/{SHA}/statuses",
            {"key": "k" * 256, "phase": "success"},
        ),
    ],
)
def test_every_text_field_is_bounded(client: TestClient, path: str, body: dict[str, str]) -> None:
    answer = client.post(path, json=body)
    assert answer.status_code == 422, answer.text
