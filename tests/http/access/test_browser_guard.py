"""A loopback daemon without tokens (the demo's and the README's set-up) is still safe from
the browser: a write another site's page sends (text/plain, a form, multipart, a JSON
fetch with its Origin), and any request with a foreign Host (DNS rebinding), is refused
and changes nothing; every answer carries the CSP and framing headers; the webhooks keep
their own rules."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.cli.sandbox import git
from promoter.http.access.guard import CSP
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

HOLD = "/api/v1/strategies/guestbook/hold"
WRITES = [
    HOLD,
    "/api/v1/strategies/guestbook/promote",
    "/api/v1/strategies/guestbook/approve",
    "/api/v1/refresh",
    f"/api/v1/repositories/gitops/commits/{'a' * 40}/statuses",
]
BODY = '{"environment": "dev", "reason": "from another site", "key": "ci", "phase": "success"}'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, GitOpsRepo]]:
    """One daemon for the module's refusals: each test checks that it changed nothing."""
    root = tmp_path_factory.mktemp("guarded")
    gitops = GitOpsRepo.create(root)
    daemon = Daemon(local_config(gitops.path, root / "state"))
    with TestClient(daemon.app, base_url="http://127.0.0.1") as client:
        wait_for(lambda: dev(client).get("proposed"), what="a first reconcile")
        yield client, gitops


@pytest.fixture
def client(served: tuple[TestClient, GitOpsRepo]) -> TestClient:
    return served[0]


@pytest.fixture
def state(served: tuple[TestClient, GitOpsRepo]) -> Iterator[None]:
    """The test must leave the holds and the ledger in git as they were."""
    client, gitops = served
    before = (dev(client)["holds"], notes(gitops))
    yield
    assert (dev(client)["holds"], notes(gitops)) == before


def dev(client: TestClient) -> dict[str, Any]:
    env: dict[str, Any] = client.get("/api/v1/strategies/guestbook").json()["environments"][0]
    return env


def notes(gitops: GitOpsRepo) -> str:
    return git(gitops.path, "for-each-ref", "refs/notes/promoter.ledger")


def audit(client: TestClient, **query: str) -> list[dict[str, Any]]:
    def found() -> list[dict[str, Any]] | None:
        entries: list[dict[str, Any]] = client.get("/api/v1/audit", params=query).json()["entries"]
        return entries or None

    return wait_for(found, what=f"audit entries {query}")


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", BODY),
        ("application/x-www-form-urlencoded", "environment=dev&reason=csrf"),
        ("multipart/form-data; boundary=x", '--x\r\nContent-Disposition: form-data; name="a"'),
        (None, BODY),
    ],
)
@pytest.mark.parametrize("path", WRITES)
def test_a_write_that_is_not_json_is_refused_with_415(
    client: TestClient, state: None, path: str, content_type: str | None, body: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    answer = client.post(path, content=body, headers=headers)
    assert answer.status_code == 415, answer.text
    assert "application/json" in answer.json()["error"]


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://127.0.0.1:9"},  # another port of this machine: another origin
        {"origin": "http://localhost"},
        {"origin": "https://evil.example"},
        {"origin": "null"},  # a sandboxed frame, a data: URL
        {"sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-site"},  # 127.0.0.1:9 and 127.0.0.1:8080 are one site
        {"sec-fetch-site": "same-origin", "origin": "https://evil.example"},
    ],
)
@pytest.mark.parametrize("path", WRITES)
def test_a_write_from_another_sites_page_is_refused_with_403(
    client: TestClient, state: None, path: str, headers: dict[str, str]
) -> None:
    answer = client.post(
        path, content=BODY, headers={"content-type": "application/json", **headers}
    )
    assert answer.status_code == 403, answer.text


def test_a_cross_site_refusal_is_audited_with_where_it_came_from(
    client: TestClient, state: None
) -> None:
    answer = client.post(
        HOLD, json={"environment": "dev"}, headers={"origin": "https://evil.example/audited"}
    )
    assert answer.status_code == 403
    entry = next(e for e in audit(client, action="hold") if "audited" in (e["origin"] or ""))
    assert entry["outcome"] == "refused" and entry["status"] == 403
    assert entry["origin"] == "https://evil.example/audited" and entry["strategy"] == "guestbook"


def test_the_daemons_own_page_may_write(gitops: GitOpsRepo, tmp_path: Path) -> None:
    with TestClient(Daemon(local_config(gitops.path, tmp_path / "state")).app) as client:
        wait_for(lambda: dev(client).get("proposed"), what="a first reconcile")
        own = {"origin": "http://127.0.0.1", "sec-fetch-site": "same-origin"}
        answer = client.post(HOLD, json={"environment": "dev", "reason": "mine"}, headers=own)
        assert answer.status_code == 200, answer.text
        held = wait_for(lambda: dev(client)["holds"], what="the hold in the view")
    assert [h["reason"] for h in held] == ["held by local: mine"]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "127.0.0.1.evil.example"])
@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_foreign_host_is_refused_for_reads_and_writes(
    client: TestClient, state: None, host: str, method: str
) -> None:
    for path in ["/", "/api/v1/strategies/guestbook", "/dashboard/guestbook", "/metrics", *WRITES]:
        answer = client.request(
            method, path, content=BODY, headers={"host": host, "content-type": "application/json"}
        )
        assert answer.status_code == 421, (path, answer.text)
        assert answer.headers["content-security-policy"] == CSP


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost", "[::1]:8080", "10.1.2.3"])
def test_loopback_names_and_addresses_are_served(client: TestClient, host: str) -> None:
    assert client.get("/api/v1/strategies", headers={"host": host}).status_code == 200


def test_a_configured_host_name_and_the_public_url_are_served(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(
        gitops.path,
        tmp_path / "state",
        access="  hosts: [promoter.example.com]",
        publicUrl="https://deploys.example.com",
    )
    with TestClient(Daemon(config).app) as client:
        for host in ("promoter.example.com", "deploys.example.com", "PROMOTER.example.com."):
            assert client.get("/healthz", headers={"host": host}).status_code == 200
        assert client.get("/healthz", headers={"host": "other.example.com"}).status_code == 421
        own = {"origin": "https://deploys.example.com", "host": "promoter.internal:8080"}
        answer = client.post("/api/v1/refresh", json={}, headers={**own, "host": "10.0.0.1"})
        assert answer.status_code == 202, answer.text


@pytest.mark.parametrize("path", ["/", "/dashboard/guestbook", "/audit", "/strategies/guestbook"])
def test_every_page_forbids_inline_script_framing_and_sniffing(
    client: TestClient, path: str
) -> None:
    page = client.get(path, headers={"accept": "text/html"})
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    assert "script-src 'self'" in CSP and "frame-ancestors 'none'" in CSP
    assert "'unsafe-inline'" not in CSP
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["referrer-policy"] == "no-referrer"
    html = page.text
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"
    assert "<style" not in html and not re.search(r"\sstyle=", html), "an inline style"
    assert not re.search(r"\son[a-z]+=", html), "an inline event handler"


def test_json_answers_and_static_files_carry_the_headers_too(client: TestClient) -> None:
    for path in ("/api/v1/strategies", "/static/dashboard.js", "/static/status.css", "/healthz"):
        answer = client.get(path)
        assert answer.status_code == 200
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cross-origin-resource-policy"] == "same-origin"


def test_no_cookie_is_ever_set(client: TestClient) -> None:
    for path in ("/", "/dashboard/guestbook", "/api/v1/strategies", "/audit"):
        assert "set-cookie" not in client.get(path, headers={"accept": "text/html"}).headers
    assert "set-cookie" not in client.post("/api/v1/refresh", json={}).headers


@pytest.mark.parametrize("root", ["", "/promoter"])
def test_webhooks_are_left_to_their_own_signature_checks(
    served: tuple[TestClient, GitOpsRepo], root: str
) -> None:
    """An SCM sends neither a browser's headers nor, for GitHub, always JSON: a foreign
    Host and a form body reach the receiver, which refuses the unsigned delivery; also
    when a proxy serves the daemon under a path (its POSTs then take the usual way)."""
    client = TestClient(served[0].app, base_url="http://127.0.0.1", root_path=root)
    answer = client.post(
        f"{root}/webhooks/github",
        content="payload=%7B%7D",
        headers={
            "host": "promoter.example.com",
            "content-type": "application/x-www-form-urlencoded",
            "x-github-event": "push",
            "x-github-delivery": "d-1",
            "x-hub-signature-256": "sha256=" + "0" * 64,
        },
    )
    assert answer.status_code == 401
    assert "content-security-policy" not in answer.headers
