"""Who the daemon takes a caller for: a named token, a trusted proxy's identity header
(only from the proxy's addresses), the local caller of a loopback daemon without
credentials (never through a reverse proxy), an anonymous caller (reads only when
configured), and ``daemon.apiToken``'s one shared admin."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.errors import ConfigError
from promoter.http import AccessControl
from promoter.http.access.identity import MAX_NAME
from promoter.wiring import Daemon
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, local_config, wait_for

HOLD = "/api/v1/strategies/guestbook/hold"
PROXY = """\
  proxy:
    userHeader: X-Forwarded-Email
    groupsHeader: X-Forwarded-Groups
    trustedAddresses: [10.0.0.0/8]
  grants:
    - {groups: [sre], role: operator}"""


def serve(gitops: GitOpsRepo, tmp_path: Path, access: str = "", **daemon: object) -> Daemon:
    return Daemon(local_config(gitops.path, tmp_path / "state", access=access, **daemon))


def ready(client: TestClient, **headers: str) -> None:
    wait_for(
        lambda: (
            client.get("/api/v1/strategies/guestbook", headers=headers).json().get("reconciledAt")
        ),
        what="a first reconcile",
    )


@pytest.fixture
def proxied(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[Daemon]:
    yield serve(gitops, tmp_path, PROXY)


def test_an_identity_header_from_an_untrusted_address_is_refused(proxied: Daemon) -> None:
    with TestClient(proxied.app, client=("192.0.2.7", 4000)) as client:
        sent = {"x-forwarded-email": "ada@example.com", "x-forwarded-groups": "sre"}
        assert client.get("/api/v1/strategies", headers=sent).status_code == 401
        answer = client.post(HOLD, json={"environment": "dev", "reason": "x"}, headers=sent)
        assert answer.status_code == 401
        assert "trusted proxy" in answer.json()["error"]


def test_the_proxys_identity_and_groups_are_the_caller(proxied: Daemon) -> None:
    with TestClient(proxied.app, client=("10.1.2.3", 4000)) as client:
        sre = {"x-forwarded-email": "ada@example.com", "x-forwarded-groups": "dev, sre"}
        ready(client, **sre)
        me = client.get("/api/v1/whoami", headers=sre).json()
        assert (me["name"], me["via"], me["groups"]) == ("ada@example.com", "proxy", ["dev", "sre"])
        answer = client.post(HOLD, json={"environment": "dev", "reason": "by sre"}, headers=sre)
        assert answer.status_code == 200, answer.text
        outsider = {"x-forwarded-email": "eve@example.com"}
        assert client.post(HOLD, json={"environment": "dev"}, headers=outsider).status_code == 403
        assert client.get("/api/v1/strategies").status_code == 401  # the proxy let it by alone
        entries = client.get("/api/v1/audit", headers=sre).json()["entries"]
        assert {(e["who"], e["via"], e["address"]) for e in entries} >= {
            ("ada@example.com", "proxy", "10.1.2.3"),
            ("eve@example.com", "proxy", "10.1.2.3"),
        }


def test_a_proxys_name_of_256_characters_without_groups_is_taken_and_blanks_or_longer_refused(
    proxied: Daemon,
) -> None:
    with TestClient(proxied.app, client=("10.1.2.3", 4000)) as client:
        for name in ("   ", "a" * (MAX_NAME + 1)):
            answer = client.get("/api/v1/whoami", headers={"x-forwarded-email": name})
            assert answer.status_code == 401, name
            assert answer.json()["error"] == "X-Forwarded-Email names no user"
        longest = {"x-forwarded-email": "a" * MAX_NAME}
        me = client.get("/api/v1/whoami", headers=longest).json()
        assert (me["name"], me["via"], me["groups"]) == ("a" * MAX_NAME, "proxy", [])


def test_a_loopback_daemon_without_tokens_serves_its_own_user_as_local_admin(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    with TestClient(serve(gitops, tmp_path).app) as client:
        ready(client)
        assert client.get("/api/v1/whoami").json()["name"] == "local"
        held = client.post(HOLD, json={"environment": "dev", "reason": "mine"})
        assert held.status_code == 200, held.text


@pytest.mark.parametrize("header", ["x-forwarded-for", "forwarded", "x-real-ip"])
def test_a_request_through_a_reverse_proxy_is_not_the_local_admin(
    gitops: GitOpsRepo, tmp_path: Path, header: str
) -> None:
    """nginx on the same machine makes every caller a loopback one: reads, no writes."""
    with TestClient(serve(gitops, tmp_path).app) as client:
        ready(client)
        via = {header: "203.0.113.9"}
        assert client.get("/api/v1/strategies/guestbook", headers=via).status_code == 200
        answer = client.post(HOLD, json={"environment": "dev", "reason": "x"}, headers=via)
        assert answer.status_code == 401
        assert client.get("/api/v1/whoami", headers=via).json()["name"] == "anonymous"


def test_anonymous_reads_only_when_configured_and_never_writes(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    people = access_yaml(tmp_path / "t", {"olga": ["role: operator"]}, anonymous="viewer")
    with TestClient(serve(gitops, tmp_path, people).app) as client:
        ready(client)
        assert client.post(HOLD, json={"environment": "dev", "reason": "x"}).status_code == 401
        wrong = {"authorization": "Bearer not-a-token"}
        assert client.get("/api/v1/strategies", headers=wrong).status_code == 401
        held = client.post(HOLD, json={"environment": "dev", "reason": "x"}, headers=bearer("olga"))
        assert held.status_code == 200


def test_without_anonymous_reads_a_token_is_needed_to_read(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    people = access_yaml(tmp_path / "t", {"vic": ["role: viewer"]})
    with TestClient(serve(gitops, tmp_path, people).app) as client:
        for path in (
            "/api/v1/strategies",
            "/api/v1/strategies/guestbook",
            "/events",
            "/api/v1/audit",
        ):
            assert client.get(path).status_code == 401, path
        page = client.get("/dashboard/guestbook", headers={"accept": "text/html"})
        assert page.status_code == 401 and 'data-auth="needed"' in page.text
        assert "guestbook" not in page.text.split("<main", 1)[1]
        for path in ("/healthz", "/metrics"):  # probes and scrapers carry no credentials
            assert client.get(path).status_code == 200, path
        assert client.get("/api/v1/strategies", headers=bearer("vic")).status_code == 200


def test_the_shared_api_token_is_one_admin(gitops: GitOpsRepo, tmp_path: Path) -> None:
    (tmp_path / "shared").write_text("the-shared-token\n")
    daemon = serve(gitops, tmp_path, apiToken=f"{{fromFile: {tmp_path / 'shared'}}}")
    with TestClient(daemon.app) as client:
        shared = {"authorization": "Bearer the-shared-token"}
        ready(client, **shared)
        assert client.get("/api/v1/whoami", headers=shared).json()["name"] == "api-token"
        answer = client.post(HOLD, json={"environment": "dev", "reason": "x"}, headers=shared)
        assert answer.status_code == 200
        assert client.post(HOLD, json={"environment": "dev", "reason": "x"}).status_code == 401


@pytest.mark.parametrize(
    ("access", "daemon", "problem"),
    [
        ("  anonymous: admin", {"host": "0.0.0.0"}, "only for a daemon listening on loopback"),
        ("  anonymous: operator", {"host": "10.0.0.5"}, "only for a daemon listening on loopback"),
        ("  kubernetes: {tokenReview: true}", {}, "only in Kubernetes mode"),
    ],
)
def test_settings_that_would_open_the_daemon_are_refused_at_start(
    gitops: GitOpsRepo, tmp_path: Path, access: str, daemon: dict[str, str], problem: str
) -> None:
    config = local_config(gitops.path, tmp_path / "state", access=access, **daemon)
    with pytest.raises(ConfigError, match=problem):
        AccessControl.from_config(config)


def test_a_token_may_not_take_the_shared_tokens_name(gitops: GitOpsRepo, tmp_path: Path) -> None:
    (tmp_path / "shared").write_text("the-shared-token\n")
    people = access_yaml(tmp_path / "t", {"api-token": ["role: viewer"]})
    config = local_config(
        gitops.path,
        tmp_path / "state",
        access=people,
        apiToken=f"{{fromFile: {tmp_path / 'shared'}}}",
    )
    with pytest.raises(ConfigError, match="apiToken's name"):
        AccessControl.from_config(config)
