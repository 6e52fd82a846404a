"""Which of the provider's keys checks an ID token, on its own: the key of the token's
``kid`` from the keys already read, the keys read again once when it is not among them,
the one key when the token names none, and a refusal when several could be meant."""

from __future__ import annotations

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from promoter.http.access.oidc import Key, Provider, Refused


def rsa_key(kid: str | None) -> Key:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = RSAAlgorithm.to_jwk(private.public_key(), as_dict=True)
    return Key(jwt.PyJWK({**public, **({"kid": kid} if kid else {})}), "RS256")


K1, K2, NAMELESS = rsa_key("k1"), rsa_key("k2"), rsa_key(None)


class Keys(Provider):
    """A provider whose key set is given: the kept one, then the one read afresh."""

    def __init__(self, kept: list[Key], fresh: list[Key] | None = None) -> None:
        super().__init__(
            issuer="https://idp.example.com",
            client_id="promoter",
            client_secret=None,
            redirect_uri="https://promoter.example/auth/callback",
            scopes=[],
            timeout=5,
        )
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


@pytest.mark.parametrize("kid", ["k9", "XXXX", "none"])
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
