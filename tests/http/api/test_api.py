"""The daemon's HTTP API on bad input, broken repositories and missing metadata."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import commit_files
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

MISSING_REPO = """
  - name: broken
    repository: gone
    environments: [{branch: environment/dev}]
"""


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    config = local_config(gitops.path, tmp_path / "state")
    gone = config.repositories[0].model_copy(
        update={"name": "gone", "url": str(tmp_path / "no-such-repo.git")}
    )
    broken = config.promotion_strategies[0].model_copy(
        update={"name": "broken", "repository": "gone"}
    )
    config = config.model_copy(
        update={
            "repositories": [*config.repositories, gone],
            "promotion_strategies": [*config.promotion_strategies, broken],
        }
    )
    with TestClient(Daemon(config).app) as client:
        yield client


def test_an_unknown_strategy_or_repository_answers_404_json(client: TestClient) -> None:
    response = client.get("/api/v1/strategies/nope")
    assert response.status_code == 404
    assert "nope" in response.json()["error"]
    response = client.post(
        f"/api/v1/repositories/nope/commits/{'a' * 40}/statuses",
        json={"key": "ci", "phase": "success"},
    )
    assert response.status_code == 404
    assert client.post("/api/v1/refresh", json={"strategy": "nope"}).status_code == 404


@pytest.mark.parametrize(
    ("sha", "body"),
    [
        ("abc123", {"key": "ci", "phase": "success"}),
        ("g" * 40, {"key": "ci", "phase": "success"}),
        ("a" * 40, {"key": "ci", "phase": "green"}),
        ("a" * 40, {"key": "", "phase": "success"}),
        ("a" * 40, {"phase": "success"}),
        ("a" * 40, ["not", "an", "object"]),
    ],
)
def test_a_malformed_sha_or_phase_answers_422(client: TestClient, sha: str, body: object) -> None:
    response = client.post(f"/api/v1/repositories/gitops/commits/{sha}/statuses", json=body)
    assert response.status_code == 422
    assert response.json()["error"]


def test_an_unreachable_repository_is_retried_and_shown_while_the_others_carry_on(
    client: TestClient,
) -> None:
    def broken_error() -> str | None:
        view = client.get("/api/v1/strategies/broken").json()
        return view["error"]

    error = wait_for(broken_error, what="the broken strategy's error")
    assert "no-such-repo" in error
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert "gone" in ready.json()["unreachable"]
    good = wait_for(
        lambda: (v := client.get("/api/v1/strategies/guestbook").json())["reconciledAt"] and v,
        what="the healthy strategy",
    )
    assert good["error"] is None
    assert client.get("/healthz").json() == {"status": "ok"}


def test_a_hydrated_commit_without_metadata_marks_only_its_environment(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    commit_files(gitops.path, "environment/staging-next", {"hydrator.metadata": None}, "oops")

    def staging_error() -> dict[str, str] | None:
        view = client.get("/api/v1/strategies/guestbook").json()
        envs = {e["branch"]: e for e in view["environments"]}
        return envs if envs["environment/staging"]["state"] == "error" else None

    envs = wait_for(staging_error, what="staging to report its error")
    assert "metadata" in envs["environment/staging"]["reason"]
    assert envs["environment/dev"]["state"] == "up-to-date"


def test_metrics_are_exported_in_prometheus_format(client: TestClient) -> None:
    wait_for(
        lambda: client.get("/api/v1/strategies/guestbook").json()["reconciledAt"],
        what="a reconcile",
    )
    text = client.get("/metrics").text
    for name in (
        "promoter_reconcile_total",
        "promoter_reconcile_duration_seconds",
        "promoter_scm_calls_total",
        "promoter_promotions_total",
    ):
        assert f"# TYPE {name}" in text


def test_writes_need_the_bearer_token_when_one_is_configured(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMOTER_TEST_API_TOKEN", "s3cret-token")
    config = local_config(
        gitops.path, tmp_path / "state2", apiToken="{fromEnv: PROMOTER_TEST_API_TOKEN}"
    )
    url = f"/api/v1/repositories/gitops/commits/{gitops.tip('environment/dev')}/statuses"
    body = {"key": "ci", "phase": "success"}
    with TestClient(Daemon(config).app) as client:
        assert client.post(url, json=body).status_code == 401
        wrong = {"authorization": "Bearer nope"}
        assert client.post(url, json=body, headers=wrong).status_code == 401
        right = {"authorization": "Bearer s3cret-token"}
        assert client.post(url, json=body, headers=right).status_code == 201
