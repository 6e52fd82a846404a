"""The verifiers alone, on a fake clock: what each accepts at its edges, and what it refuses."""

from __future__ import annotations

import pytest

from webhooks.verify import GitHubSignature, GitLabToken, SignedDelivery

from .helpers import GITLAB_SIGNING_SECRET

NOW = 1_700_000_000


def signed(now: float = NOW) -> SignedDelivery:
    return SignedDelivery([GITLAB_SIGNING_SECRET], clock=lambda: now)


def signature(timestamp: int, msg_id: str = "msg_1", body: bytes = b"{}") -> str:
    return SignedDelivery.sign(GITLAB_SIGNING_SECRET, msg_id, timestamp, body)


@pytest.mark.parametrize("missing", ["msg_id", "timestamp", "signature"])
def test_a_signed_delivery_missing_a_header_is_refused(missing: str) -> None:
    headers: dict[str, str | None] = {
        "msg_id": "msg_1",
        "timestamp": str(NOW),
        "signature": signature(NOW),
    }
    assert signed().verify(headers["msg_id"], headers["timestamp"], headers["signature"], b"{}")
    headers[missing] = None
    assert not signed().verify(headers["msg_id"], headers["timestamp"], headers["signature"], b"{}")
    headers[missing] = ""
    assert not signed().verify(headers["msg_id"], headers["timestamp"], headers["signature"], b"{}")


def test_a_delivery_signed_exactly_the_tolerance_ago_or_ahead_is_accepted() -> None:
    assert signed(NOW + 300).verify("msg_1", str(NOW), signature(NOW), b"{}")
    assert signed(NOW - 300).verify("msg_1", str(NOW), signature(NOW), b"{}")
    assert not signed(NOW + 301).verify("msg_1", str(NOW), signature(NOW), b"{}")
    assert not signed(NOW - 301).verify("msg_1", str(NOW), signature(NOW), b"{}")


def test_a_timestamp_of_twelve_digits_is_read_and_one_of_thirteen_is_refused_unread() -> None:
    twelve, thirteen = 10**11, 10**12
    assert signed(twelve).verify("msg_1", str(twelve), signature(twelve), b"{}")
    assert not signed(thirteen).verify("msg_1", str(thirteen), signature(thirteen), b"{}")


def test_signatures_are_separated_by_spaces_only() -> None:
    other = SignedDelivery.sign("whsec_" + "A" * 32, "msg_1", NOW, b"{}")
    assert signed().verify("msg_1", str(NOW), f"{other} {signature(NOW)}", b"{}")
    assert not signed().verify("msg_1", str(NOW), f"{other}\t{signature(NOW)}", b"{}")


def test_only_the_first_sixteen_entries_of_a_signature_list_are_looked_at() -> None:
    padding = " ".join(["v2,x"] * 15)
    assert signed().verify("msg_1", str(NOW), f"{padding} {signature(NOW)}", b"{}")
    assert not signed().verify("msg_1", str(NOW), f"{padding}  {signature(NOW)}", b"{}")


def test_a_verifier_is_true_when_it_has_a_secret_and_false_without() -> None:
    assert [bool(GitHubSignature(["s"])), bool(GitLabToken(["t"])), bool(signed())] == [
        True,
        True,
        True,
    ]
    assert [bool(GitHubSignature([])), bool(GitLabToken([])), bool(SignedDelivery([]))] == [
        False,
        False,
        False,
    ]


def test_every_configured_gitlab_token_is_accepted_during_a_rotation() -> None:
    tokens = GitLabToken(["old-token", "new-token"])
    assert tokens.verify("old-token") and tokens.verify("new-token")
    assert not tokens.verify("other-token")


def test_a_malformed_signing_secret_is_refused_at_start_up_and_says_how_to_write_it() -> None:
    from promoter.errors import ConfigError
    from webhooks.verify import decode_signing_secret

    assert decode_signing_secret("whsec_c2VjcmV0") == b"secret"
    for malformed in ("whsec_c2Vj*cmV0", "whsec_c2VjcmV0!", "whsec_not base64"):
        with pytest.raises(ConfigError) as refused:
            decode_signing_secret(malformed)
        assert refused.value.problems == ["a GitLab webhook signing secret must be whsec_<base64>"]
    with pytest.raises(ConfigError) as empty:
        decode_signing_secret("whsec_")
    assert empty.value.problems == ["a GitLab webhook signing secret must not be empty"]


def test_an_empty_secret_is_refused_at_start_up_naming_which() -> None:
    from promoter.errors import ConfigError

    with pytest.raises(ConfigError) as github:
        GitHubSignature(["s", " "])
    assert github.value.problems == ["a GitHub webhook secret must not be empty or only whitespace"]
    with pytest.raises(ConfigError) as gitlab:
        GitLabToken([""])
    assert gitlab.value.problems == ["a GitLab webhook token must not be empty or only whitespace"]
