"""Which of the provider's keys checks an ID token, on its own: the key of the token's
``kid`` from the keys already read, the keys read again once when it is not among them,
the one key when the token names none, and a refusal when several could be meant."""

from __future__ import annotations

from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from promoter.http.access.oidc import KEYS_REFRESH, Endpoints, Key, Provider, Refused, _keys


def rsa_key(kid: str | None) -> Key:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return Key(jwt.PyJWK({**public, **({"kid": kid} if kid else {})}), "RS256")


K1, K2, NAMELESS = rsa_key("k1"), rsa_key("k2"), rsa_key(None)
SETTINGS: dict[str, Any] = {
    "issuer": "https://idp.example.com",
    "client_id": "promoter",
    "client_secret": None,
    "redirect_uri": "https://promoter.example/auth/callback",
    "scopes": [],
    "timeout": 5,
}


class Keys(Provider):
    """A provider whose key set is given: the kept one, then the one read afresh."""

    def __init__(self, kept: list[Key], fresh: list[Key] | None = None) -> None:
        super().__init__(**SETTINGS)
        self.kept, self.fresh = kept, fresh if fresh is not None else kept
        self.asked: list[bool] = []

    def _key_set(self, fresh: bool) -> list[Key]:
        self.asked.append(fresh)
        return self.fresh if fresh else self.kept


def test_the_key_of_the_tokens_kid_is_taken_from_the_keys_already_read() -> None:
    provider = Keys([K1, K2])
    assert provider._key("k2", "RS256") is K2.jwk
    assert provider.asked == [False]


def test_a_kid_not_among_the_keys_read_reads_them_again_once() -> None:
    provider = Keys([K1], fresh=[K1, K2])
    assert provider._key("k2", "RS256") is K2.jwk
    assert provider.asked == [False, True]
    gone = Keys([K1])
    with pytest.raises(Refused) as refused:
        gone._key("k9", "RS256")
    assert str(refused.value) == "the ID token is signed by a key the provider does not list (k9)"
    assert gone.asked == [False, True]


FILLER = "X" * 4
"""The text a mutation test puts in place of a string (here: of the nameless key's "")."""


# A key published without a kid is read as naming "": a kid it could be mistaken for
# (the filler, "none", or any other) must not select it.
@pytest.mark.parametrize("kid", ["k9", FILLER, "none"], ids=["other", "filler", "none"])
def test_a_token_naming_a_kid_is_never_checked_with_a_key_that_names_none(kid: str) -> None:
    with pytest.raises(Refused):
        Keys([NAMELESS])._key(kid, "RS256")


def test_a_token_naming_no_kid_is_checked_with_the_one_key_and_refused_among_several() -> None:
    assert Keys([K1])._key("", "RS256") is K1.jwk
    assert Keys([NAMELESS])._key("", "RS256") is NAMELESS.jwk
    rotated = Keys([], fresh=[K2])  # none usable among the keys read: read again
    assert rotated._key("", "RS256") is K2.jwk and rotated.asked == [False, True]
    several = Keys([K1, K2])
    with pytest.raises(Refused) as refused:
        several._key("", "RS256")
    assert str(refused.value) == "the ID token names no key (kid) and the provider has several"
    assert several.asked == [False]


class Published(Provider):
    """A provider whose JWKS is given, on an injected clock, counting its reads."""

    def __init__(self, keys: list[dict[str, object]], now: list[float]) -> None:
        super().__init__(**SETTINGS, clock=lambda: now[0])
        self.published = keys
        self.reads = 0

    def endpoints(self) -> Endpoints:
        site = "https://idp.example.com"
        return Endpoints(site, f"{site}/authorize", f"{site}/token", f"{site}/jwks", True)

    def _get(self, url: str) -> dict[str, object]:
        assert url == "https://idp.example.com/jwks"
        self.reads += 1
        return {"keys": self.published}


def test_the_keys_are_read_once_and_read_afresh_at_most_once_a_minute() -> None:
    now = [1_000.0]
    provider = Published([{**K1.jwk._jwk_data}], now)
    assert [k.jwk.key_id for k in provider._key_set(fresh=False)] == ["k1"]
    provider._key_set(fresh=False)
    assert provider.reads == 1  # kept
    now[0] += KEYS_REFRESH - 1
    provider._key_set(fresh=True)
    assert provider.reads == 1  # read less than a minute ago: not again
    now[0] += 1
    provider._key_set(fresh=True)
    assert provider.reads == 2


def test_keys_that_hold_no_usable_key_are_refused() -> None:
    provider = Published([{"kty": "RSA", "use": "enc", "n": "x", "e": "AQAB"}], [0.0])
    with pytest.raises(Refused) as refused:
        provider._key_set(fresh=False)
    assert str(refused.value) == "the provider's keys (jwks_uri) hold no usable key"


def test_only_signing_keys_of_a_known_type_are_taken_with_the_algorithm_they_name() -> None:
    data = dict(K1.jwk._jwk_data)
    found = _keys(
        {
            "keys": [
                "not a key",
                {**data, "kid": "enc", "use": "enc"},
                {"kty": "OKP", "crv": "X448", "x": "AAAA", "kid": "unknown"},
                {**data, "kid": "signs", "use": "sig", "alg": "RS384"},
                {**data, "kid": "listed", "alg": ["RS256"]},
                {**data, "kid": "object", "alg": {"name": "RS256"}},
                {**data, "kid": "unsaid"},
            ]
        }
    )
    assert [(k.jwk.key_id, k.named) for k in found] == [("signs", "RS384"), ("unsaid", None)]
    assert _keys({}) == [] and _keys({"keys": None}) == []


def test_an_unknown_kid_is_named_forty_characters_long_at_most() -> None:
    with pytest.raises(Refused) as refused:
        Keys([K1])._key("k" * 41, "RS256")
    assert str(refused.value).endswith(f"does not list ({'k' * 40})")
