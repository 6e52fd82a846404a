"""The tests' OpenID Connect provider refuses at its token endpoint what a real provider
refuses (RFC 6749 4.1.3, RFC 7636), so that a sign-in test passing means the daemon's
token request is one a real provider takes: the client's authentication, by HTTP Basic or
in the form as the discovery document says, and only one of them; the grant type; a code
it issued, once; the redirect URI the code was asked for; the PKCE verifier of the code's
challenge; each parameter once."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.http.access.oidc_provider import CLIENT_ID, CLIENT_SECRET, OidcProvider, Person

CALLBACK = "http://127.0.0.1:1/auth/callback"
OTHER_CALLBACK = "http://127.0.0.1:1/other/callback"
VERIFIER = "a-verifier-of-this-sign-in-43-characters-at-least"
BASIC = httpx.BasicAuth(CLIENT_ID, CLIENT_SECRET)


@pytest.fixture
def provider() -> Iterator[OidcProvider]:
    provider = OidcProvider(CALLBACK)
    provider.redirect_uris.append(OTHER_CALLBACK)
    provider.person = Person("ada@example.com")
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


def code(provider: OidcProvider, redirect_uri: str = CALLBACK) -> str:
    """A code the provider issues for an authorization request with VERIFIER's challenge."""
    challenge = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest())
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": redirect_uri,
        "scope": "openid",
        "state": "s",
        "nonce": "n",
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    back = httpx.get(f"{provider.url}/authorize?{urlencode(query)}")
    assert back.status_code == 302, back.text
    return parse_qs(urlsplit(back.headers["location"]).query)["code"][0]


def exchange(
    provider: OidcProvider, form: dict[str, str], auth: httpx.Auth | None = BASIC
) -> httpx.Response:
    """The token request as the daemon makes it, with ``form``'s changes ("" leaves out)."""
    sent = {
        "grant_type": "authorization_code",
        "code": code(provider),
        "redirect_uri": CALLBACK,
        "code_verifier": VERIFIER,
        "client_id": CLIENT_ID,
        **form,
    }
    body = {k: v for k, v in sent.items() if v != ""}
    return httpx.post(f"{provider.url}/token", data=body, auth=auth)


def test_the_token_request_the_daemon_makes_is_answered_an_id_token(
    provider: OidcProvider,
) -> None:
    answer = exchange(provider, {})
    assert answer.status_code == 200, answer.text
    assert answer.json()["id_token"].count(".") == 2


@pytest.mark.parametrize(
    ("form", "error"),
    [
        ({"grant_type": "AUTHORIZATION_CODE"}, "unsupported_grant_type"),
        ({"grant_type": ""}, "unsupported_grant_type"),
        ({"code": "a-code-it-never-issued"}, "invalid_grant"),
        ({"code": ""}, "invalid_grant"),
        ({"redirect_uri": OTHER_CALLBACK}, "invalid_grant"),
        ({"redirect_uri": ""}, "invalid_grant"),
        ({"code_verifier": "another-verifier-of-43-characters-at-least-x"}, "invalid_grant"),
        ({"code_verifier": ""}, "invalid_grant"),
        ({"client_id": "another-client"}, "invalid_request"),
        ({"client_secret": CLIENT_SECRET}, "invalid_request"),  # with Basic: two ways
    ],
    ids=lambda value: (
        "-".join(f"{k}={v or 'none'}" for k, v in value.items())
        if isinstance(value, dict)
        else value
    ),
)
def test_a_token_request_a_real_provider_refuses_is_refused(
    provider: OidcProvider, form: dict[str, str], error: str
) -> None:
    answer = exchange(provider, form)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == error


def test_a_code_is_taken_once_and_only_for_the_redirect_uri_it_was_asked_for(
    provider: OidcProvider,
) -> None:
    issued = code(provider)
    assert exchange(provider, {"code": issued}).status_code == 200
    again = exchange(provider, {"code": issued})
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    elsewhere = code(provider, OTHER_CALLBACK)
    assert exchange(provider, {"code": elsewhere}).status_code == 400
    for_there = code(provider, OTHER_CALLBACK)
    assert exchange(provider, {"code": for_there, "redirect_uri": OTHER_CALLBACK}).is_success


@pytest.mark.parametrize(
    "auth",
    [None, httpx.BasicAuth(CLIENT_ID, "a-wrong-secret"), httpx.BasicAuth("other", CLIENT_SECRET)],
    ids=["none", "wrong-secret", "other-client"],
)
def test_a_client_that_does_not_authenticate_is_refused_as_invalid_client(
    provider: OidcProvider, auth: httpx.Auth | None
) -> None:
    answer = exchange(provider, {}, auth=auth)
    assert answer.status_code == 401
    assert answer.json()["error"] == "invalid_client"


def test_a_parameter_sent_twice_is_refused(provider: OidcProvider) -> None:
    body = urlencode(
        [
            ("grant_type", "authorization_code"),
            ("code", code(provider)),
            ("redirect_uri", CALLBACK),
            ("code_verifier", VERIFIER),
            ("code_verifier", "another"),
        ]
    )
    form = {"content-type": "application/x-www-form-urlencoded"}
    answer = httpx.post(f"{provider.url}/token", content=body, headers=form, auth=BASIC)
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"


@pytest.mark.parametrize(
    ("form", "auth", "status", "error"),
    [
        ({"client_secret": CLIENT_SECRET}, None, 200, None),
        ({}, None, 401, "invalid_client"),
        ({"client_secret": "a-wrong-secret"}, None, 401, "invalid_client"),
        ({"client_secret": CLIENT_SECRET, "client_id": ""}, None, 401, "invalid_client"),
        ({}, BASIC, 400, "invalid_request"),
        ({"client_secret": CLIENT_SECRET}, BASIC, 400, "invalid_request"),
    ],
    ids=["secret", "none", "wrong-secret", "no-client-id", "basic", "both"],
)
def test_a_provider_taking_the_secret_in_the_form_takes_it_there_alone(
    provider: OidcProvider,
    form: dict[str, str],
    auth: httpx.Auth | None,
    status: int,
    error: str | None,
) -> None:
    provider.mischief = {"auth": "client_secret_post"}
    said: dict[str, Any] = httpx.get(f"{provider.url}/.well-known/openid-configuration").json()
    assert said["token_endpoint_auth_methods_supported"] == ["client_secret_post"]
    answer = exchange(provider, form, auth=auth)
    assert answer.status_code == status, answer.text
    assert answer.json().get("error") == error
