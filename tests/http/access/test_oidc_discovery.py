"""What the client takes from a provider's discovery document, on its own: the issuer it
was configured with, a final slash aside; its endpoints over https wherever they are, over
plain http only on this machine (a provider in tests), never a relative URL nor another
scheme; PKCE with S256; the client's secret by HTTP Basic unless only the form is taken.
The document is read under the issuer, once an hour; the URL the browser is sent to keeps
the authorization endpoint's own query."""

from __future__ import annotations

import pytest

from promoter.http.access.oidc import DISCOVERY_TTL, Provider, Refused, _endpoints, _where

ISSUER = "https://idp.example.com"


def document(**urls: str) -> dict[str, object]:
    found: dict[str, object] = {
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
        "jwks_uri": f"{ISSUER}/jwks",
    }
    return found | urls


@pytest.mark.parametrize(
    ("said", "configured"),
    [
        (f"{ISSUER}/", ISSUER),
        (ISSUER, f"{ISSUER}/"),
        ("https://sso.example.com/realms/DEVBOX", "https://sso.example.com/realms/DEVBOX"),
    ],
    ids=["slash-said", "slash-configured", "ends-in-x"],
)
def test_the_issuer_named_is_the_one_configured_a_final_slash_aside(
    said: str, configured: str
) -> None:
    assert _endpoints(document(issuer=said), configured).issuer == said


LONG = f"{ISSUER}/{'t' * 200}"


@pytest.mark.parametrize(
    ("said", "named"),
    [
        (None, "''"),
        ("", "''"),
        (f"{ISSUER}/other", f"'{ISSUER}/other'"),
        (LONG, repr(LONG[:100])),  # named by its first 100 characters
    ],
    ids=["none", "empty", "another", "long"],
)
def test_a_document_naming_no_issuer_or_another_is_refused(said: str | None, named: str) -> None:
    with pytest.raises(Refused) as refused:
        _endpoints(document() | {"issuer": said}, ISSUER)
    assert str(refused.value) == f"the discovery document names another issuer ({named})"


def test_endpoints_over_https_are_taken() -> None:
    found = _endpoints(document(token_endpoint="HTTPS://login.example.net/oauth/token"), ISSUER)
    assert (found.authorization, found.token) == (
        f"{ISSUER}/authorize",
        "HTTPS://login.example.net/oauth/token",
    )
    assert found.jwks == f"{ISSUER}/jwks" and found.basic_auth


def test_endpoints_over_plain_http_are_taken_on_this_machine_only() -> None:
    local = _endpoints(document(token_endpoint="http://127.0.0.1:8443/token"), ISSUER)
    assert local.token == "http://127.0.0.1:8443/token"


@pytest.mark.parametrize(
    "url",
    [
        "http://idp.example.com/token",
        "ftp://127.0.0.1/token",
        "/token",
        "https:///token",
    ],
    ids=["http-elsewhere", "another-scheme", "relative", "no-host"],
)
def test_an_endpoint_that_is_not_https_nor_on_this_machine_is_refused(url: str) -> None:
    with pytest.raises(Refused) as refused:
        _endpoints(document(token_endpoint=url), ISSUER)
    assert str(refused.value) == "the discovery document's token_endpoint is missing or not https"


@pytest.mark.parametrize("methods", [["plain"], []])
def test_a_provider_that_does_not_take_pkce_with_s256_is_refused(methods: list[str]) -> None:
    with pytest.raises(Refused) as refused:
        _endpoints(document() | {"code_challenge_methods_supported": methods}, ISSUER)
    assert str(refused.value) == "the provider does not take PKCE with S256"


def test_a_provider_that_says_nothing_of_pkce_or_takes_s256_is_used() -> None:
    assert _endpoints(document(), ISSUER).token == f"{ISSUER}/token"
    said = document() | {"code_challenge_methods_supported": ["plain", "S256"]}
    assert _endpoints(said, ISSUER).token == f"{ISSUER}/token"


@pytest.mark.parametrize(
    ("methods", "basic"),
    [
        (None, True),
        (["client_secret_basic"], True),
        (["client_secret_post", "client_secret_basic"], True),
        (["client_secret_post"], False),
    ],
)
def test_the_client_sends_its_secret_by_basic_unless_the_provider_takes_it_only_in_the_form(
    methods: list[str] | None, basic: bool
) -> None:
    said = document() | {"token_endpoint_auth_methods_supported": methods}
    assert _endpoints(said, ISSUER).basic_auth is basic


class Discovered(Provider):
    """A provider whose discovery document is given, on an injected clock, counting reads."""

    def __init__(self, authorization: str, issuer: str = ISSUER, now: float = 0.0) -> None:
        self.now = now
        super().__init__(
            issuer=issuer,
            client_id="promoter",
            client_secret=None,
            redirect_uri="https://promoter.example/auth/callback",
            scopes=["email"],
            timeout=5,
            clock=lambda: self.now,
        )
        self.said = document(authorization_endpoint=authorization) | {"issuer": issuer}
        self.asked: list[str] = []

    def _get(self, url: str) -> dict[str, object]:
        self.asked.append(url)
        return self.said


@pytest.mark.parametrize(
    "issuer",
    [ISSUER, f"{ISSUER}/", "https://sso.example.com/realms/DEVBOX"],
    ids=["plain", "final-slash", "ends-in-x"],
)
def test_the_discovery_document_is_read_under_the_issuer_once_an_hour(issuer: str) -> None:
    provider = Discovered(f"{ISSUER}/authorize", issuer=issuer, now=1_000.0)
    provider.endpoints()
    provider.now += DISCOVERY_TTL - 1
    provider.endpoints()
    assert provider.asked == [f"{issuer.rstrip('/')}/.well-known/openid-configuration"]
    provider.now += 1  # an hour after the read, to the second: read again
    provider.endpoints()
    assert len(provider.asked) == 2


def test_the_browser_is_sent_to_the_authorization_endpoint_with_its_own_query_kept() -> None:
    kept = Discovered(f"{ISSUER}/authorize?tenant=acme")
    url = kept.authorization_url(state="s", nonce="n", challenge="c")
    assert url.startswith(f"{ISSUER}/authorize?tenant=acme&response_type=code&client_id=promoter")
    plain = Discovered(f"{ISSUER}/authorize").authorization_url(state="s", nonce="n", challenge="c")
    assert plain.startswith(f"{ISSUER}/authorize?response_type=code&")
    assert "scope=openid+email" in plain and "code_challenge_method=S256" in plain


def test_a_provider_is_named_in_words_by_its_host_and_path_at_most_120_characters() -> None:
    path = "/" + "p" * 200
    assert _where(f"https://idp.example.com{path}?secret=x") == f"idp.example.com{path}"[:120]
