"""What an ID token's claims make of the person signed in, on its own: the name claim must
name someone (a text, not blank, at most 256 characters), an e-mail the provider has not
verified names nobody, and only the groups some grant names are kept, sorted, once each."""

from __future__ import annotations

from typing import Any

import pytest

from promoter.config import Grant
from promoter.http.access.identity import MAX_NAME, Identity
from promoter.http.access.oidc import Refused
from promoter.http.access.sessions import Sessions
from promoter.http.access.sign_in import SignIn

GRANTS = [
    Grant(role="operator", groups=["sre"]),
    Grant(role="approver", groups=["release-managers"], environments=["prod"]),
]


def person(claims: dict[str, Any], *, username: str = "email") -> Identity:
    sign_in = SignIn(
        None,  # type: ignore[arg-type]  # the claims alone ask no provider
        Sessions(b"k" * 32, ttl=60, secure=False),
        username_claim=username,
        groups_claim="groups",
        grants=GRANTS,
    )
    return sign_in._identity(claims)


@pytest.mark.parametrize("name", [None, 42, "", "   ", "a" * (MAX_NAME + 1)])
def test_a_name_claim_that_names_nobody_is_refused_by_the_claims_name(name: object) -> None:
    with pytest.raises(Refused) as refused:
        person({"email": name})
    assert str(refused.value) == "the ID token's 'email' claim names nobody"


def test_a_name_of_the_longest_length_is_taken_and_its_spaces_trimmed() -> None:
    assert person({"email": "a" * MAX_NAME}).name == "a" * MAX_NAME
    assert person({"email": " ada@example.com "}) == Identity("ada@example.com", "oidc")


def test_an_email_the_provider_has_not_verified_names_nobody() -> None:
    with pytest.raises(Refused) as refused:
        person({"email": "ada@example.com", "email_verified": False})
    assert str(refused.value) == "the provider has not verified this e-mail address"
    assert person({"email": "ada@example.com"}).name == "ada@example.com"  # not said: taken
    by_login = person({"login": "ada", "email_verified": False}, username="login")
    assert by_login.name == "ada"  # the name is not the e-mail: its check does not apply


def test_only_the_groups_a_grant_names_are_kept_sorted_and_once_each() -> None:
    claims = {"email": "ada@example.com", "groups": ["sre", "everyone", "release-managers", "sre"]}
    assert person(claims).groups == ("release-managers", "sre")
    assert person({"email": "ada@example.com", "groups": "sre"}).groups == ("sre",)
    assert person({"email": "ada@example.com"}).groups == ()
    with pytest.raises(Refused) as refused:
        person({"email": "ada@example.com", "groups": {"sre": True}})
    assert str(refused.value) == "the ID token's 'groups' claim is not a list"
