"""The access parts alone: the Host guard's answer to a foreign name, the loopback daemon
without credentials (every caller of this machine an admin, no other name answered), and
the TokenReview's answers kept for their time and no longer."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import Message, Receive, Send
from starlette.types import Scope as AsgiScope

from promoter.config import Config, Grant
from promoter.errors import ConfigError
from promoter.http.access import identity as identity_module
from promoter.http.access.access import AccessControl
from promoter.http.access.guard import (
    HEADERS,
    BrowserGuard,
    Hosts,
    cross_site,
    json_only,
    origin_of,
)
from promoter.http.access.identity import Credentials, Identity, Unauthenticated
from promoter.http.access.roles import API_TOKEN_NAME, Forbidden, Policy, Scope
from tests.support import local_config


def guarded() -> TestClient:
    async def hello(request: Request) -> PlainTextResponse:
        return PlainTextResponse("hello")

    routes = [Route("/api/v1/x", hello), Route("/webhooks/github", hello, methods=["POST"])]
    app = BrowserGuard(Starlette(routes=routes), hosts=Hosts(["promoter.example"]))
    return TestClient(app, base_url="http://promoter.example")


def raw_guarded(scope: dict[str, object]) -> list[Message]:
    """The messages the Host guard sends for one raw ASGI request (no app behind it)."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    guard = BrowserGuard(Starlette(), hosts=Hosts(["promoter.example"]))
    asyncio.run(guard(scope, receive, send))
    return sent


def test_a_foreign_host_is_answered_421_naming_it_with_the_browser_headers() -> None:
    answer = guarded().get("/api/v1/x", headers={"host": "evil.example:8080"})
    assert answer.status_code == 421
    assert answer.json() == {
        "error": "this daemon does not answer to the Host 'evil.example'; "
        "add the name to access.hosts if it is really yours"
    }
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["content-length"] == str(len(answer.content))
    for name, value in HEADERS:
        assert answer.headers[name.decode()] == value.decode()


def test_a_foreign_host_is_named_at_most_a_hundred_characters_long() -> None:
    name = "a" * 150 + ".example"
    answer = guarded().get("/api/v1/x", headers={"host": name})
    assert answer.status_code == 421
    assert f"Host {name[:100]!r};" in answer.json()["error"]


def test_the_421_is_sent_with_lowercase_header_names_as_asgi_requires() -> None:
    start, body = raw_guarded(
        {"type": "http", "path": "/", "headers": [(b"host", b"evil.example")]}
    )
    assert start["status"] == 421
    assert start["headers"] == [
        (b"content-type", b"application/json"),
        *HEADERS,
        (b"content-length", str(len(body["body"])).encode()),
    ]


def test_a_request_with_no_host_header_is_answered_421_naming_an_empty_host() -> None:
    """HTTP/1.0 lets a client leave Host out: refused as a name the daemon does not
    answer to, not a crash."""
    start, body = raw_guarded(
        {"type": "http", "path": "/api/v1/x", "headers": [(b"accept", b"*/*")]}
    )
    assert start["status"] == 421
    assert body["body"] == (
        b'{"error": "this daemon does not answer to the Host \'\'; '
        b'add the name to access.hosts if it is really yours"}'
    )


def test_an_own_host_is_answered_with_the_browser_headers_and_a_webhook_whatever_its_host() -> None:
    client = guarded()
    own = client.get("/api/v1/x")
    assert (own.status_code, own.text) == (200, "hello")
    for name, value in HEADERS:
        assert own.headers[name.decode()] == value.decode()
    hook = client.post("/webhooks/github", headers={"host": "anything.example"})
    assert (hook.status_code, hook.text) == (200, "hello")
    assert "content-security-policy" not in hook.headers


def test_a_bracketed_host_is_named_up_to_its_first_closing_bracket() -> None:
    start, body = raw_guarded(
        {"type": "http", "path": "/api/v1/x", "headers": [(b"host", b"[evil.example]:80]")]}
    )
    assert start["status"] == 421
    assert b"the Host 'evil.example';" in body["body"]


def test_an_answer_started_without_a_headers_list_gets_the_browser_headers() -> None:
    """ASGI lets an app leave out a response's headers: none is the empty list."""

    async def bare(scope: AsgiScope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 204})
        await send({"type": "http.response.body", "body": b""})

    guard = BrowserGuard(bare, hosts=Hosts(["promoter.example"]))
    answer = TestClient(guard, base_url="http://promoter.example").get("/api/v1/x")
    assert answer.status_code == 204
    for name, value in HEADERS:
        assert answer.headers[name.decode()] == value.decode()


def test_a_path_not_under_the_proxys_root_path_is_taken_whole_as_the_router_takes_it() -> None:
    """A server may set ``root_path`` without putting it in front of ``path``: the router
    then routes the path as it is, and so does the guard, which leaves a webhook alone."""
    client = TestClient(guarded().app, base_url="http://promoter.example", root_path="/promoter")
    hook = client.post("/webhooks/github", headers={"host": "anything.example"})
    assert (hook.status_code, hook.text) == (200, "hello")


def request(headers: dict[str, str] | None = None) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return Request({"type": "http", "headers": raw, "client": ("127.0.0.1", 5000)})


def identify(credentials: Credentials | AccessControl, req: Request) -> object:
    return asyncio.run(credentials.identify(req))


def test_a_loopback_daemon_without_credentials_takes_its_machines_caller_for_an_admin() -> None:
    local = AccessControl.local()
    who = identify(local, request())
    assert who == Identity("local", "local")
    assert isinstance(who, Identity) and local.policy.allows(who, "admin")
    proxied = identify(local, request({"x-forwarded-for": "198.51.100.1"}))
    assert proxied == Identity("anonymous", "anonymous")
    assert identify(local, request({"authorization": "Bearer guess"})) == Unauthenticated(
        "the bearer token is not accepted"
    )
    assert (local.hosts.allows("localhost"), local.hosts.allows("evil.example")) == (True, False)
    assert local.public_origin is None


class Review:
    """A TokenReview that counts its calls: ``good`` is ada, anything else refused."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, token: str) -> Identity | None:
        self.calls.append(token)
        return Identity("ada", "kubernetes") if token == "good" else None


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(identity_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


def test_a_reviewed_token_is_asked_once_for_its_time_then_again(clock: list[float]) -> None:
    review = Review()
    credentials = Credentials(tokens={}, review=review, review_ttl=60)
    bearer = request({"authorization": "Bearer good"})
    assert identify(credentials, bearer) == Identity("ada", "kubernetes")
    clock[0] += 59
    assert identify(credentials, bearer) == Identity("ada", "kubernetes")
    assert review.calls == ["good"]
    clock[0] += 1
    assert identify(credentials, bearer) == Identity("ada", "kubernetes")
    assert review.calls == ["good", "good"]


def test_a_refused_token_is_remembered_as_refused_and_each_token_apart(clock: list[float]) -> None:
    review = Review()
    credentials = Credentials(tokens={}, review=review, review_ttl=60)
    refused = Unauthenticated("the bearer token is not accepted")
    assert identify(credentials, request({"authorization": "Bearer bad"})) == refused
    assert identify(credentials, request({"authorization": "Bearer bad"})) == refused
    assert identify(credentials, request({"authorization": "Bearer good"})) == Identity(
        "ada", "kubernetes"
    )
    assert review.calls == ["bad", "good"]


def test_the_reviews_kept_are_forgotten_past_four_thousand_and_ninety_six(
    clock: list[float],
) -> None:
    review = Review()
    credentials = Credentials(tokens={}, review=review, review_ttl=60)

    async def ask(tokens: list[str]) -> None:
        for token in tokens:
            await credentials.identify(request({"authorization": f"Bearer {token}"}))

    asyncio.run(ask([f"t{n}" for n in range(4097)] + ["t0"]))
    assert len(review.calls) == 4097
    asyncio.run(ask(["extra", "t1"]))
    assert review.calls[-2:] == ["extra", "t1"]


def test_whoami_lists_the_role_given_without_a_grant_or_each_grant_naming_the_caller() -> None:
    grants = [
        Grant(role="operator", users=["ada"], strategies=["guestbook"], environments=["prod"]),
        Grant(role="viewer", groups=["sre"]),
        Grant(role="admin", users=["bo"]),
    ]
    policy = Policy(grants, anonymous="admin", api_token=True)
    given = [{"role": "admin", "strategies": [], "environments": []}]
    assert policy.roles(Identity("local", "local")) == given
    assert policy.roles(Identity(API_TOKEN_NAME, "token")) == given
    assert policy.roles(Identity("anonymous", "anonymous")) == [
        {"role": "viewer", "strategies": [], "environments": []}
    ]
    assert policy.roles(Identity("ada", "proxy", ("sre",))) == [
        {"role": "operator", "strategies": ["guestbook"], "environments": ["prod"]},
        {"role": "viewer", "strategies": [], "environments": []},
    ]
    assert policy.roles(Identity("cy", "token")) == []
    assert Policy(grants, anonymous=None).roles(Identity("anonymous", "anonymous")) == []


@pytest.mark.parametrize(
    ("media", "json"),
    [
        ("application/json", True),
        ("Application/JSON ; charset=utf-8", True),
        ("application/json; charset=utf-8; profile=x", True),
        ("text/plain; application/json", False),
        ("application/x-www-form-urlencoded", False),
        (None, False),
    ],
)
def test_a_write_is_json_only_by_the_media_type_before_its_parameters(
    media: str | None, json: bool
) -> None:
    assert json_only(request({"content-type": media} if media else {})) is json


def test_a_refusal_names_the_role_the_strategy_and_each_environment_it_lacked() -> None:
    policy = Policy([Grant(role="viewer", users=["ada"])], anonymous=None)
    with pytest.raises(Forbidden) as refused:
        policy.require(
            Identity("ada", "token"),
            "operator",
            Scope("guestbook", ("environment/staging", "environment/prod")),
        )
    assert str(refused.value) == (
        "ada needs the operator role on guestbook (environment/staging, environment/prod)"
    )
    with pytest.raises(Forbidden, match=r"^ada needs the operator role on guestbook$"):
        policy.require(Identity("ada", "token"), "operator", Scope("guestbook"))


@pytest.mark.parametrize("header", ["Basic s3cret", "Bearer ", "Bearer", "s3cret", "Token s3cret"])
def test_an_authorization_that_is_not_a_bearer_token_is_refused_as_such(header: str) -> None:
    credentials = Credentials(tokens={"ada": "s3cret"}, review=Review())
    assert identify(credentials, request({"authorization": header})) == Unauthenticated(
        "the Authorization header is not 'Bearer TOKEN'"
    )


def test_a_bearer_token_is_read_whatever_the_schemes_case_and_a_wrong_one_refused() -> None:
    credentials = Credentials(tokens={"ada": "s3cret"})
    assert identify(credentials, request({"authorization": "bearer  s3cret "})) == Identity(
        "ada", "token"
    )
    assert identify(credentials, request({"authorization": "Bearer guess"})) == Unauthenticated(
        "the bearer token is not accepted"
    )


def config_of(tmp_path: Path, access: str = "", host: str = "127.0.0.1") -> Config:
    return local_config(tmp_path / "gitops", tmp_path / "state", access=access, host=host)


@pytest.mark.parametrize(("anonymous", "role"), [("none", None), ("viewer", "viewer")])
def test_a_daemon_off_loopback_may_let_anonymous_callers_read_or_nothing(
    tmp_path: Path, anonymous: str, role: str | None
) -> None:
    config = config_of(tmp_path, f"  anonymous: {anonymous}", host="10.0.0.5")
    assert AccessControl.from_config(config).policy.anonymous == role


def test_the_daemons_own_name_is_answered_and_no_made_up_one(tmp_path: Path) -> None:
    hosts = AccessControl.from_config(config_of(tmp_path, host="promoter.internal")).hosts
    assert (hosts.allows("promoter.internal"), hosts.allows("xxxx"), hosts.allows("")) == (
        True,
        False,
        False,
    )


def test_a_sign_in_without_a_url_to_come_back_to_is_refused_at_start(tmp_path: Path) -> None:
    config = config_of(tmp_path, "  oidc: {issuer: https://idp.example.com, clientId: promoter}")
    with pytest.raises(ConfigError) as refused:
        AccessControl.from_config(config)
    assert refused.value.problems == [
        "access.oidc: set daemon.publicUrl (or oidc.redirectUrl): the provider sends"
        " browsers back to its /auth/callback"
    ]


def test_token_review_is_refused_outside_kubernetes_and_asked_inside(tmp_path: Path) -> None:
    config = config_of(tmp_path, "  kubernetes: {tokenReview: true}")
    with pytest.raises(
        ConfigError, match=r"^access.kubernetes.tokenReview: only in Kubernetes mode$"
    ):
        AccessControl.from_config(config)
    review = Review()
    access = AccessControl.from_config(config, review=review)
    assert identify(access, request({"authorization": "Bearer good"})) == Identity(
        "ada", "kubernetes"
    )
    assert review.calls == ["good"]


def test_the_shared_tokens_name_is_an_admin_only_when_the_shared_token_is_set() -> None:
    shared = Identity(API_TOKEN_NAME, "token")
    assert Policy([], anonymous=None).roles(shared) == []
    assert Policy([], anonymous=None, api_token=True).roles(shared)[0]["role"] == "admin"


def test_an_origin_without_a_host_name_keeps_its_port() -> None:
    assert origin_of("http://:8080") == "http://:8080"


def test_kubernetes_mode_without_token_review_asks_no_review(tmp_path: Path) -> None:
    review = Review()
    access = AccessControl.from_config(config_of(tmp_path), review=review)
    assert identify(access, request({"authorization": "Bearer good"})) == Unauthenticated(
        "the bearer token is not accepted"
    )
    assert review.calls == []


def test_a_configured_name_keeps_its_letters_and_loses_its_final_dot() -> None:
    hosts = Hosts(["box.", " Fox "])
    assert (hosts.allows("box"), hosts.allows("fox"), hosts.allows("bo")) == (True, True, False)


def test_another_sites_fetch_is_named_twenty_characters_long_at_most() -> None:
    why = cross_site(request({"sec-fetch-site": "cross-site-and-then-some"}))
    assert why == "a cross-site-and-then- request (Sec-Fetch-Site) may not write"
