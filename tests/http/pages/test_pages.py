"""The dashboard's pages through the app: HTML for browsers, JSON for API clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

HTML = {"accept": "text/html,application/xhtml+xml"}


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    config = local_config(gitops.path, tmp_path / "state")
    with TestClient(Daemon(config).app) as client:
        wait_for(
            lambda: client.get("/api/v1/strategies/guestbook").json()["reconciledAt"],
            what="a first reconcile",
        )
        yield client


def test_the_root_is_the_dashboard_for_browsers_and_json_for_api_clients(
    client: TestClient,
) -> None:
    page = client.get("/", headers=HTML)
    assert page.headers["content-type"].startswith("text/html")
    assert '<a href="/dashboard/guestbook">guestbook</a>' in page.text
    assert client.get("/").json()["strategies"] == "/api/v1/strategies"


def test_the_strategy_page_shows_environments_as_columns_with_commits_and_gates(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    wait_for(
        lambda: (
            client.get("/api/v1/strategies/guestbook").json()["environments"][0].get("pullRequest")
        ),
        what="a dev PR",
    )
    html = client.get("/dashboard/guestbook").text
    for branch in ("environment/dev", "environment/staging", "environment/prod"):
        assert f'<section class="env" id="env-{branch}"' in html
    assert "Bump guestbook to 1.1.0" in html
    assert "<code>ci</code> waiting for ci" in html
    assert '<button type="button" data-op="hold" data-env="environment/dev"' in html
    assert '<script src="/static/dashboard.js" defer></script>' in html
    assert "DORA, last 30 days" in html


def test_the_script_and_style_are_served_from_the_package(client: TestClient) -> None:
    script = client.get("/static/dashboard.js")
    assert script.status_code == 200 and "EventSource" in script.text
    assert client.get("/static/dashboard.css").status_code == 200


def test_an_unknown_strategy_is_a_404_page_with_the_name_escaped(client: TestClient) -> None:
    response = client.get("/dashboard/%3Cb%3Enope")
    assert response.status_code == 404
    assert "&lt;b&gt;nope" in response.text and "<b>nope" not in response.text


def test_dora_figures_are_in_the_api_and_in_metrics(client: TestClient) -> None:
    body = client.get("/api/v1/strategies/guestbook/dora").json()
    assert [e["environment"] for e in body["environments"]] == [
        "environment/dev",
        "environment/staging",
        "environment/prod",
    ]
    assert client.get("/api/v1/strategies/nope/dora").status_code == 404
    metrics = client.get("/metrics").text
    assert "# TYPE promoter_dora_window_deployments gauge" in metrics
    assert 'promoter_dora_window_deployments{environment="environment/prod"' in metrics
    assert "# TYPE promoter_dora_deployments_total counter" in metrics


def test_a_pin_shows_in_its_column_and_in_the_history(client: TestClient) -> None:
    prod = client.get("/api/v1/strategies/guestbook").json()["environments"][2]
    dry = prod["active"]["drySha"]
    response = client.post(
        "/api/v1/strategies/guestbook/pin",
        json={"environment": "environment/prod", "drySha": dry, "reason": "freeze <week>"},
    )
    assert response.status_code < 300, response.text
    html = wait_for(
        lambda: "<dd class=pin>" in (text := client.get("/dashboard/guestbook").text) and text,
        what="the pin on the dashboard",
    )
    assert f"<dt>pinned</dt><dd class=pin><code>{dry[:8]}</code> freeze &lt;week&gt;" in html
    assert "pinned: freeze &lt;week&gt;" in html
