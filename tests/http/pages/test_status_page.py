"""The strategy's status page, which the promoter's checks on a PR link to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.e2e.test_local_promotion import set_status
from tests.support import GitOpsRepo, local_config, wait_for

PUBLIC_URL = "https://promoter.example.invalid"


@pytest.fixture
def client(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    config = local_config(gitops.path, tmp_path / "state", publicUrl=PUBLIC_URL)
    with TestClient(Daemon(config).app) as client:
        wait_for(
            lambda: client.get("/api/v1/strategies/guestbook").json()["reconciledAt"],
            what="a first reconcile",
        )
        yield client


def dev(client: TestClient) -> dict[str, object]:
    view = client.get("/api/v1/strategies/guestbook").json()
    env: dict[str, object] = view["environments"][0]
    return env


def test_the_page_shows_each_environment_its_gates_and_the_promotion_pr(
    client: TestClient, gitops: GitOpsRepo
) -> None:
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    waiting = wait_for(lambda: (e := dev(client))["pullRequest"] and e, what="a dev PR")
    page = client.get("/strategies/guestbook")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    html = page.text
    for branch in ("environment/dev", "environment/staging", "environment/prod"):
        assert f'<section id="{branch}">' in html
    assert '<span class="badge blocked">blocked</span>' in html
    assert "<code>ci</code>: waiting for ci: report it on" in html
    assert f"#{waiting['pullRequest']['number']} (open)" in html  # type: ignore[index]
    assert 'href="/api/v1/strategies/guestbook"' in html


def test_the_checks_on_a_pr_link_to_the_page(client: TestClient, gitops: GitOpsRepo) -> None:
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    # staging's check is written once decided: dev runs the change, healthy.
    head = wait_for(lambda: (e := dev(client))["pullRequest"] and e)["proposed"]["hydratedSha"]  # type: ignore[index]
    set_status(client, head, "ci")
    wait_for(lambda: (dev(client)["active"] or {})["drySha"] == change, what="dev promoted")  # type: ignore[index]
    set_status(client, gitops.tip("environment/dev"), "health")

    def previous_environment_check() -> dict[str, str] | None:
        staging = client.get("/api/v1/strategies/guestbook").json()["environments"][1]
        statuses = (staging.get("proposed") or {}).get("commitStatuses") or []
        return next((s for s in statuses if s["key"] == "promoter/previous-environment"), None)

    check = wait_for(previous_environment_check, what="staging's previous-environment check")
    assert check["url"] == f"{PUBLIC_URL}/strategies/guestbook"
    page = client.get(check["url"].removeprefix(PUBLIC_URL))
    assert page.status_code == 200 and "<h1>guestbook</h1>" in page.text


def test_values_from_git_and_people_are_escaped(client: TestClient) -> None:
    response = client.post(
        "/api/v1/strategies/guestbook/hold",
        json={"environment": "environment/dev", "reason": "<script>alert(1)</script>"},
    )
    assert response.status_code < 300, response.text
    html = wait_for(
        lambda: "alert(1)" in (text := client.get("/strategies/guestbook").text) and text,
        what="the hold on the page",
    )
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_an_unknown_strategy_is_a_404_page(client: TestClient) -> None:
    response = client.get("/strategies/%3Cb%3Enope")
    assert response.status_code == 404
    assert "<b>" not in response.text
