"""Sign-in with an OpenID Connect provider (``access.oidc``), against a small provider served
over real HTTP on 127.0.0.1 (``oidc_provider``), the daemon under uvicorn and a client that
keeps cookies as a browser does. The failure paths first: another sign-in's state, a
replayed callback or code, an ID token for another audience or issuer, expired, signed by
another key or with another nonce; a write without the session's CSRF token, a cookie
signed with another key, a person whose groups have no role, a provider that is down. Then
the person signed in with their groups' roles, the status page through the session, and
signing out."""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from starlette.testclient import TestClient

from promoter.config import Config
from promoter.errors import ConfigError
from promoter.http import AccessControl, ThreadServer, free_port
from promoter.http.access.oidc import LEEWAY
from promoter.http.access.sessions import Sessions
from promoter.wiring import Daemon
from tests.http.access.oidc_provider import CLIENT_SECRET, OidcProvider, Person
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, local_config, wait_for

ADA = Person("ada@example.com", ["sre", "everyone"])
RELEASE = Person("rm@example.com", ["release-managers"])
INTERN = Person("ivy@example.com", ["interns"])
HOLD = "/api/v1/strategies/guestbook/hold"
DEV = "environment/dev"


@dataclass
class Site:
    url: str
    provider: OidcProvider
    session_key: bytes

    def browser(self) -> httpx.Client:
        """A client that keeps cookies and follows no redirect by itself."""
        return httpx.Client(follow_redirects=False, timeout=20)


def oidc_yaml(tmp_path: Path, issuer: str) -> tuple[str, bytes]:
    secret, key = tmp_path / "client-secret", tmp_path / "session-key"
    secret.write_text(CLIENT_SECRET)
    key.write_text("a session key for the tests, long enough")
    return (
        "  oidc:\n"
        f"    issuer: {issuer}\n"
        "    clientId: promoter\n"
        f"    clientSecret: {{fromFile: {secret}}}\n"
        "    scopes: [openid, email, groups]\n"
        f"    sessionKey: {{fromFile: {key}}}\n"
        "    sessionTtl: 1h\n"
        "    timeout: 5s\n"
    ), key.read_bytes().strip()


GRANTS = (
    "    - {groups: [sre], role: operator}\n"
    "    - {groups: [release-managers], role: approver, environments: [prod]}"
)


def serve(gitops: GitOpsRepo, tmp_path: Path, issuer: str | None = None) -> Iterator[Site]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    provider = OidcProvider(f"{url}/auth/callback").start()
    oidc, key = oidc_yaml(tmp_path, issuer or provider.url)
    access = access_yaml(tmp_path / "people", {"ci": ["role: admin"]}, more=oidc.rstrip())
    access = access.replace("  grants:\n", "  grants:\n" + GRANTS + "\n")
    config = local_config(gitops.path, tmp_path / "state", port=port, publicUrl=url, access=access)
    server = ThreadServer(Daemon(config).app, port).start()
    try:
        wait_for(
            lambda: httpx.get(f"{url}/api/v1/strategies/guestbook", headers=bearer("ci")).json()[
                "reconciledAt"
            ],
            what="a first reconcile",
        )
        yield Site(url, provider, key)
    finally:
        server.stop()
        provider.stop()


@pytest.fixture
def site(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[Site]:
    yield from serve(gitops, tmp_path)


def start(site: Site, browser: httpx.Client, person: Person, next_path: str = "/") -> str:
    """Begin a sign-in as ``person``: the URL the provider sends the browser back to."""
    site.provider.person = person
    login = browser.get(f"{site.url}/auth/login", params={"next": next_path})
    assert login.status_code == 303, login.text
    assert login.headers["location"].startswith(f"{site.provider.url}/authorize?")
    back = browser.get(login.headers["location"])
    assert back.status_code == 302, back.text
    return back.headers["location"]


def sign_in(
    site: Site, browser: httpx.Client, person: Person, next_path: str = "/"
) -> httpx.Response:
    return browser.get(start(site, browser, person, next_path))


def session_cookie(browser: httpx.Client) -> str | None:
    return browser.cookies.get("promoter-session")


def test_a_callback_carrying_another_sign_ins_state_is_refused(site: Site) -> None:
    with site.browser() as browser:
        callback = start(site, browser, ADA).replace("state=", "state=x")
        answer = browser.get(callback)
        assert answer.status_code == 400
        said = "Sign-in refused: the answer's state is not this browser's sign-in."
        assert said in html.unescape(answer.text)
        assert session_cookie(browser) is None
    assert site.provider.token_requests == 0  # the code was never exchanged
    with site.browser() as stranger, site.browser() as starter:
        answer = stranger.get(start(site, starter, ADA))  # a browser that started no sign-in
        assert answer.status_code == 400
        said = "Sign-in refused: this browser started no sign-in, or it took over ten minutes."
        assert said in html.unescape(answer.text)


def test_a_replayed_callback_and_a_replayed_code_are_refused(site: Site) -> None:
    with site.browser() as browser:
        callback = start(site, browser, ADA)
        pending = browser.cookies.get("promoter-sign-in")
        assert browser.get(callback).status_code == 303
        browser.cookies.set("promoter-sign-in", pending or "")  # the same answer, again
        again = browser.get(callback)
        assert again.status_code == 400
        assert "Sign-in refused: this sign-in was completed already." in again.text
    with site.browser() as other:  # the code, under another sign-in of its own
        fresh = start(site, other, ADA)
        used_code = callback.split("code=", 1)[1].split("&", 1)[0]
        fresh_code = fresh.split("code=", 1)[1].split("&", 1)[0]
        answer = other.get(fresh.replace(fresh_code, used_code))
        assert answer.status_code == 400
        assert "the provider refused the code (invalid_grant" in answer.text
        assert session_cookie(other) is None


@pytest.mark.parametrize(
    ("mischief", "said"),
    [
        ({"aud": "another-client"}, "the ID token is for another client (aud)"),
        (
            {"aud": ["promoter", "another-client"]},
            "the ID token names other audiences and is not for this client (azp)",
        ),
        (
            {"aud": ["promoter", "another-client"], "azp": "another-client"},
            "the ID token names other audiences and is not for this client (azp)",
        ),
        ({"iss": "https://idp.example.com"}, "the ID token comes from another issuer (iss)"),
        ({"expired": True}, "the ID token has expired"),
        ({"exp": -LEEWAY - 30}, "the ID token has expired"),
        ({"iat": LEEWAY + 30}, "the ID token is not valid: The token is not yet valid (iat)"),
        ({"other_key": True}, "the ID token's signature does not verify"),
        ({"nonce": "another-nonce"}, "the ID token's nonce is not this sign-in's"),
        ({"alg": "none"}, "the ID token is signed with 'none', not a key's"),
        ({"alg": "HS256"}, "the ID token is signed with 'HS256', not a key's"),
        ({"alg": "ES256"}, "the ID token is signed by a key the provider does not list (k1)"),
        (
            {"alg": "ES256", "keys_without_alg": True},
            "the ID token is signed by a key the provider does not list (k1)",
        ),
    ],
)
def test_an_id_token_that_is_not_for_this_sign_in_is_refused(
    site: Site, mischief: dict[str, object], said: str
) -> None:
    site.provider.mischief = mischief
    with site.browser() as browser:
        answer = sign_in(site, browser, ADA)
        assert answer.status_code == 400
        assert f"Sign-in refused: {said}." in html.unescape(answer.text)
        assert session_cookie(browser) is None


@pytest.mark.parametrize("off", [{"iat": LEEWAY - 30}, {"exp": -LEEWAY + 30}])
def test_an_id_token_from_a_provider_whose_clock_is_off_by_under_a_minute_is_taken(
    site: Site, off: dict[str, float]
) -> None:
    site.provider.mischief = off
    with site.browser() as browser:
        signed = sign_in(site, browser, ADA)
        assert signed.status_code == 303, signed.text
        assert session_cookie(browser) is not None


def test_a_person_whose_groups_have_no_role_is_not_signed_in(site: Site) -> None:
    with site.browser() as browser:
        answer = sign_in(site, browser, INTERN)
        assert answer.status_code == 403
        assert (
            "Sign-in refused: ivy@example.com signed in, but no grant gives them or their groups"
            " (none this daemon's grants name) a role here: ask an admin for one in access.grants."
        ) in html.unescape(answer.text)
        assert session_cookie(browser) is None


def test_a_write_through_a_session_needs_its_csrf_token(site: Site) -> None:
    with site.browser() as browser:
        assert sign_in(site, browser, ADA).status_code == 303
        body = {"environment": DEV, "reason": "through the session"}
        bare = browser.post(f"{site.url}{HOLD}", json=body)
        assert bare.status_code == 401
        assert bare.json()["error"].startswith(
            "a write through a signed-in session must send its CSRF token (X-CSRF-Token);"
        )
        wrong = browser.post(f"{site.url}{HOLD}", json=body, headers={"x-csrf-token": "guess"})
        assert wrong.status_code == 401
        page = browser.get(f"{site.url}/dashboard/guestbook", headers={"accept": "text/html"})
        token = page.text.split('<meta name="csrf-token" content="', 1)[1].split('"', 1)[0]
        done = browser.post(f"{site.url}{HOLD}", json=body, headers={"x-csrf-token": token})
        assert done.status_code == 200, done.text
        audit = httpx.get(f"{site.url}/api/v1/audit", headers=bearer("ci")).json()["entries"]
    outcomes = [(e["who"], e["via"], e["status"]) for e in audit if e["action"] == "hold"]
    assert outcomes[:3] == [
        ("ada@example.com", "oidc", 200),
        ("unknown", "unknown", 401),
        ("unknown", "unknown", 401),
    ]


def test_a_session_cookie_signed_with_another_key_is_no_session(site: Site) -> None:
    forged = Sessions(b"not the daemon's key", ttl=3600, secure=False)
    _, value = forged.start("mallory@example.com", ("sre",))
    with site.browser() as browser:
        browser.cookies.set("promoter-session", value)
        answer = browser.get(f"{site.url}/api/v1/whoami")
        assert answer.status_code == 401
        assert answer.json()["error"] == (
            "the session has ended or is not this daemon's: sign in again"
        )
    ours = Sessions(site.session_key, ttl=3600, secure=False)
    _, good = ours.start("ada@example.com", ("sre",))
    tampered = good.replace(good.split(".")[0], good.split(".")[0][:-2] + "xx")
    with site.browser() as browser:
        browser.cookies.set("promoter-session", tampered)
        assert browser.get(f"{site.url}/api/v1/whoami").status_code == 401


def test_a_provider_that_cannot_be_reached_leaves_the_sign_in_page_saying_so(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    for found in serve(gitops, tmp_path, issuer=closed):
        with found.browser() as browser:
            answer = browser.get(f"{found.url}/auth/login")
            assert answer.status_code == 502
            assert "The identity provider cannot be used now" in answer.text
            assert "cannot be reached" in answer.text


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ("garbage", "is not JSON"),
        ("5xx", "the provider answered 503"),
        ("issuer", "the discovery document names another issuer"),
        ("relative", "the discovery document's authorization_endpoint is missing or not https"),
    ],
)
def test_a_provider_whose_discovery_document_is_wrong_is_not_used(
    site: Site, broken: str, said: str
) -> None:
    site.provider.mischief = {"discovery": broken}
    with site.browser() as browser:
        answer = browser.get(f"{site.url}/auth/login")
        assert answer.status_code == 502 and said in html.unescape(answer.text)
        assert "promoter-sign-in" not in answer.headers.get("set-cookie", "")


def test_sign_in_needs_a_url_to_come_back_to_and_an_https_issuer() -> None:
    base = {"scmProviders": [{"name": "local", "local": {}}], "daemon": {"stateDir": "/tmp/x"}}
    oidc = {"issuer": "https://idp.example.com", "clientId": "promoter"}
    with pytest.raises(ConfigError, match=r"set daemon\.publicUrl"):
        AccessControl.from_config(Config.model_validate({**base, "access": {"oidc": oidc}}))
    plain = {**oidc, "issuer": "http://idp.example.com"}
    with pytest.raises(ValidationError, match="must be https"):
        Config.model_validate({**base, "access": {"oidc": plain}})


def test_a_person_signed_in_has_their_groups_roles_and_reads_the_status_page(site: Site) -> None:
    with site.browser() as browser:
        signed = sign_in(site, browser, ADA, next_path="/strategies/guestbook")
        assert signed.status_code == 303 and signed.headers["location"] == "/strategies/guestbook"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Secure" not in cookie
        who = browser.get(f"{site.url}/api/v1/whoami").json()
        assert (who["name"], who["via"], who["groups"]) == ("ada@example.com", "oidc", ["sre"])
        assert [r["role"] for r in who["roles"]] == ["operator"]
        page = browser.get(f"{site.url}/strategies/guestbook")
        assert page.status_code == 200 and "<h1>guestbook</h1>" in page.text
    with site.browser() as browser:  # another site's page as the place to come back to
        signed = sign_in(site, browser, ADA, next_path="//evil.example/steal")
        assert signed.headers["location"] == "/"


def test_the_status_page_without_a_session_links_to_the_sign_in(site: Site) -> None:
    page = httpx.get(f"{site.url}/strategies/guestbook")
    assert page.status_code == 401
    assert 'href="/auth/login?next=%2Fstrategies%2Fguestbook"' in page.text
    assert "guestbook" in page.text and "environment/dev" not in page.text


def test_signing_out_ends_the_session_and_every_copy_of_its_cookie(site: Site) -> None:
    with site.browser() as browser:
        assert sign_in(site, browser, ADA).status_code == 303
        copy = session_cookie(browser) or ""
        page = browser.get(f"{site.url}/", headers={"accept": "text/html"})
        token = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        refused = browser.post(f"{site.url}/auth/logout", data={"csrf": "guess"})
        assert refused.status_code == 403
        foreign = {"origin": "http://evil.example", "sec-fetch-site": "cross-site"}
        forged = browser.post(f"{site.url}/auth/logout", data={"csrf": token}, headers=foreign)
        assert forged.status_code == 403 and session_cookie(browser) is not None
        out = browser.post(f"{site.url}/auth/logout", data={"csrf": token})
        assert out.status_code == 303 and session_cookie(browser) is None
    with site.browser() as thief:
        thief.cookies.set("promoter-session", copy)
        assert thief.get(f"{site.url}/api/v1/whoami").status_code == 401


def test_a_daemon_on_loopback_with_only_sign_in_takes_no_caller_as_local_admin(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    oidc, _ = oidc_yaml(tmp_path, "http://127.0.0.1:9")
    access = "  grants:\n" + GRANTS + "\n" + oidc.rstrip()
    config = local_config(
        gitops.path, tmp_path / "state", publicUrl="http://127.0.0.1:8080", access=access
    )
    with TestClient(Daemon(config).app, base_url="http://127.0.0.1") as client:
        who = client.get("/api/v1/whoami").json()
        assert (who["via"], who["roles"]) == ("local", [])  # this machine, but no role
        assert client.get("/api/v1/strategies/guestbook").status_code == 401
        body = {"environment": DEV, "reason": "r"}
        assert client.post(HOLD, json=body).status_code == 401
        page = client.get("/strategies/guestbook")
        assert page.status_code == 401 and 'href="/auth/login?next=' in page.text


def test_a_token_sent_with_a_session_cookie_names_the_caller(site: Site) -> None:
    with site.browser() as browser:
        assert sign_in(site, browser, RELEASE).status_code == 303
        who = browser.get(f"{site.url}/api/v1/whoami", headers=bearer("ci")).json()
        assert (who["name"], who["via"]) == ("ci", "token")
        body = {"environment": DEV, "reason": "by the token, no CSRF token needed"}
        held = browser.post(f"{site.url}{HOLD}", json=body, headers=bearer("ci"))
        assert held.status_code == 200, held.text
        refused = browser.post(f"{site.url}{HOLD}", json=body)  # the session alone: no CSRF
        assert refused.status_code == 401


def test_a_key_published_without_alg_verifies_each_rsa_signature_it_can_make(
    site: Site,
) -> None:
    for algorithm in ("RS256", "RS384", "PS256"):
        site.provider.mischief = {"keys_without_alg": True, "alg": algorithm}
        with site.browser() as browser:
            signed = sign_in(site, browser, ADA)
            assert signed.status_code == 303, (algorithm, signed.text)
            assert session_cookie(browser) is not None
