"""The code's exchange and the ID token, end to end: the daemon under uvicorn, the tests'
provider (``oidc_provider``, which checks the token request as a real provider does) and a
client that keeps cookies as a browser does. Each of these ends the sign-in with its words
and no session: the provider's refusal of the code (a client secret it no longer takes, a
code asked for another redirect URI or another PKCE challenge), a person who declines at
the provider, an answer that carries no code, a token endpoint's answer that is no ID
token (not JSON, none, one that is no JWT, an unknown algorithm), a required claim left
out. The daemon signs in with a provider that takes the secret in the form, with one that
publishes two keys, with a token that names no key, and with a token for several
audiences whose ``azp`` is this client."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx
import pytest

from tests.http.access.test_sign_in import ADA, Site, serve, session_cookie, sign_in, start
from tests.support import GitOpsRepo


@pytest.fixture
def site(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[Site]:
    yield from serve(gitops, tmp_path)


def refused(answer: httpx.Response) -> str:
    """The words of a refused sign-in's page."""
    assert answer.status_code == 400, answer.text
    return html.unescape(answer.text)


def callback_asked_with(site: Site, browser: httpx.Client, **changes: str) -> str:
    """The daemon's callback for a code the provider issued to this browser's sign-in's
    authorization request with ``changes``."""
    site.provider.person = ADA
    login = browser.get(f"{site.url}/auth/login")
    query = dict(parse_qsl(urlsplit(login.headers["location"]).query)) | changes
    back = browser.get(f"{site.provider.url}/authorize?{urlencode(query)}")
    assert back.status_code == 302, back.text
    return f"{site.url}/auth/callback?{urlsplit(back.headers['location']).query}"


@pytest.mark.parametrize(
    ("words", "said"),
    [
        ("The person declined.", "The person declined."),
        ("", "access_denied"),
        ("w" * 250, "w" * 200),
    ],
    ids=["words", "no-words", "long-words"],
)
def test_a_provider_that_sends_the_browser_back_with_an_error_signs_nobody_in(
    site: Site, words: str, said: str
) -> None:
    site.provider.mischief = {"deny": words}
    with site.browser() as browser:
        answer = refused(sign_in(site, browser, ADA))
        assert f"Sign-in refused: the provider did not sign you in: {said}." in answer
        assert session_cookie(browser) is None
    assert site.provider.token_requests == 0


def test_an_answer_carrying_no_code_signs_nobody_in_and_asks_the_provider_nothing(
    site: Site,
) -> None:
    with site.browser() as browser:
        callback = urlsplit(start(site, browser, ADA))
        query = [(k, v) for k, v in parse_qsl(callback.query) if k != "code"]
        answer = browser.get(f"{site.url}{callback.path}?{urlencode(query)}")
        assert "Sign-in refused: the provider's answer carries no code." in refused(answer)
        assert session_cookie(browser) is None
    assert site.provider.token_requests == 0


def test_a_client_secret_the_provider_no_longer_takes_signs_nobody_in(site: Site) -> None:
    site.provider.client_secret = "the secret rotated at the provider"
    with site.browser() as browser:
        said = refused(sign_in(site, browser, ADA))
        assert "the provider refused the code (invalid_client: client authentication" in said
        assert session_cookie(browser) is None


def test_a_code_asked_for_another_redirect_uri_signs_nobody_in(site: Site) -> None:
    other = f"{site.url}/elsewhere/callback"
    site.provider.redirect_uris.append(other)
    with site.browser() as browser:
        said = refused(browser.get(callback_asked_with(site, browser, redirect_uri=other)))
        assert "Sign-in refused: the provider refused the code (invalid_grant)." in said
        assert session_cookie(browser) is None


def test_a_code_asked_for_another_pkce_challenge_signs_nobody_in(site: Site) -> None:
    injected = base64.urlsafe_b64encode(b"a challenge of the attacker's own, 32 b")
    with site.browser() as browser:
        callback = callback_asked_with(site, browser, code_challenge=injected.decode())
        said = refused(browser.get(callback))
        assert "the provider refused the code (invalid_grant: PKCE verification failed)" in said
        assert session_cookie(browser) is None


def test_a_provider_taking_the_client_secret_in_the_form_signs_the_person_in(
    site: Site,
) -> None:
    site.provider.mischief = {"auth": "client_secret_post"}
    with site.browser() as browser:
        signed = sign_in(site, browser, ADA)
        assert signed.status_code == 303, signed.text
        assert session_cookie(browser) is not None
    site.provider.client_secret = "the secret rotated at the provider"
    with site.browser() as browser:
        said = refused(sign_in(site, browser, ADA))
        assert "(invalid_client: client authentication failed)" in said


@pytest.mark.parametrize(
    "mischief",
    [
        {"rotated": True},  # an older key published too: the one the token names is taken
        {"no_kid": True},  # a token naming no key: the one key published is taken
        {"aud": ["another-client", "promoter"], "azp": "promoter"},  # for us, by azp
    ],
    ids=["older-key-published-too", "token-naming-no-key", "several-audiences-azp"],
)
def test_a_token_a_real_provider_may_send_signs_in(site: Site, mischief: dict[str, object]) -> None:
    site.provider.mischief = mischief
    with site.browser() as browser:
        signed = sign_in(site, browser, ADA)
        assert signed.status_code == 303, signed.text
        assert session_cookie(browser) is not None


def unsigned(header: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part(header)}.{part({'sub': 'x'})}.c2lnbmF0dXJl"


NO_ID_TOKEN = "the provider's answer carries no ID token (is 'openid' a scope?)"


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (400, {"error": "invalid_grant"}, "the provider refused the code (invalid_grant)"),
        (
            400,
            {"error": "e" * 150, "error_description": "d" * 250},
            f"the provider refused the code ({'e' * 100}: {'d' * 200})",
        ),
        (500, {}, "the provider refused the code (500)"),
        (
            200,
            "<html>a login page</html>",
            "the provider's answer from the token endpoint is not JSON",
        ),
        (200, [], "the provider's answer from the token endpoint is not a JSON object"),
        *((200, {"id_token": token}, NO_ID_TOKEN) for token in (None, "", 42)),
        (200, {"id_token": "not.a-jwt"}, "the ID token is not a JWT"),
        (
            200,
            {"id_token": unsigned({"alg": "A" * 30, "kid": "k1"})},
            f"the ID token is signed with {'A' * 20!r}, not a key's",
        ),
    ],
    ids=[
        "no-words",
        "long-words",
        "no-error",
        "not-json",
        "not-an-object",
        "no-id-token",
        "empty-id-token",
        "number-id-token",
        "not-a-jwt",
        "long-alg",
    ],
)
def test_a_token_endpoint_answer_that_is_no_id_token_signs_nobody_in(
    site: Site, status: int, body: object, said: str
) -> None:
    site.provider.mischief = {"token": (status, body)}
    with site.browser() as browser:
        assert f"Sign-in refused: {said}." in refused(sign_in(site, browser, ADA))
        assert session_cookie(browser) is None


@pytest.mark.parametrize("claim", ["exp", "iat", "sub"])
def test_an_id_token_without_a_required_claim_signs_nobody_in(site: Site, claim: str) -> None:
    site.provider.mischief = {"drop": [claim]}
    with site.browser() as browser:
        said = refused(sign_in(site, browser, ADA))
        assert (
            f'Sign-in refused: the ID token is not valid: Token is missing the "{claim}" claim.'
            in said
        )
        assert session_cookie(browser) is None
