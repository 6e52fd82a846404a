"""The guards of delivery authentication, each in every configuration it has: GitLab's
token with tokens only, signing secrets only, and both; Forgejo's and Gitea's signature
while a secret is rotated; and the floor of the delivery log's retention, which keeps a
captured delivery from being replayed once its id is forgotten."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.state.statuses import StatusCache
from promoter.state.tracking import ShaIndex
from tests.webhooks.helpers import make_config
from webhooks import build_routes
from webhooks.deliveries.log import MIN_RETENTION
from webhooks.verify import ForgejoSignature, GitLabAuth, SignedDelivery

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
OTHER = "whsec_b3RoZXIgc2lnbmluZyBzZWNyZXQgb2YgdGhlIHRlc3Rz"
BODY = b'{"object_kind":"push"}'
NOW = 1_700_000_000


def signed_headers(secret: str = SECRET, *, body: bytes = BODY, **more: str) -> dict[str, str]:
    return {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(NOW),
        "webhook-signature": SignedDelivery.sign(secret, "msg_1", NOW, body),
        **more,
    }


def auth(tokens: list[str], signing: list[str]) -> GitLabAuth:
    return GitLabAuth(tokens, signing, clock=lambda: NOW)


# --- GitLab: tokens only ----------------------------------------------------------------


@pytest.mark.parametrize("token", ["tok-old", "tok-new"])
def test_with_tokens_only_each_configured_token_is_accepted(token: str) -> None:
    assert auth(["tok-old", "tok-new"], []).verify({"x-gitlab-token": token}, BODY)


@pytest.mark.parametrize("token", [None, "", "tok", "tok-old-", "xtok-old", "TOK-OLD", "tok-ol"])
def test_with_tokens_only_any_other_token_is_refused(token: str | None) -> None:
    headers = {} if token is None else {"x-gitlab-token": token}
    assert not auth(["tok-old", "tok-new"], []).verify(headers, BODY)


def test_with_tokens_only_a_signature_cannot_stand_in_for_the_token() -> None:
    gitlab = auth(["tok-old"], [])
    assert not gitlab.verify(signed_headers(), BODY)
    assert not gitlab.verify(signed_headers(**{"x-gitlab-token": "wrong"}), BODY)
    assert gitlab.verify(signed_headers(**{"x-gitlab-token": "tok-old"}), BODY)


# --- GitLab: signing secrets only -------------------------------------------------------


@pytest.mark.parametrize("token", [None, "", "tok-old", "anything", SECRET])
def test_with_signing_secrets_only_an_unsigned_delivery_is_refused_whatever_its_token(
    token: str | None,
) -> None:
    headers = {} if token is None else {"x-gitlab-token": token}
    assert not auth([], [SECRET]).verify(headers, BODY)


def test_with_signing_secrets_only_a_delivery_signed_with_one_of_them_is_accepted() -> None:
    gitlab = auth([], [SECRET, OTHER])
    assert gitlab.verify(signed_headers(SECRET), BODY)
    assert gitlab.verify(signed_headers(OTHER), BODY)


def test_with_signing_secrets_only_a_bad_signature_is_refused() -> None:
    gitlab = auth([], [SECRET])
    assert not gitlab.verify(signed_headers(OTHER), BODY)
    assert not gitlab.verify(signed_headers(SECRET), BODY + b" ")
    assert not gitlab.verify({**signed_headers(SECRET), "webhook-id": "msg_2"}, BODY)


# --- GitLab: both -----------------------------------------------------------------------


def test_with_both_a_good_signature_needs_no_token() -> None:
    assert auth(["tok-old"], [SECRET]).verify(signed_headers(), BODY)


def test_with_both_a_bad_signature_is_refused_even_with_the_right_token() -> None:
    gitlab = auth(["tok-old"], [SECRET])
    assert not gitlab.verify(signed_headers(OTHER, **{"x-gitlab-token": "tok-old"}), BODY)
    late = {**signed_headers(**{"x-gitlab-token": "tok-old"}), "webhook-timestamp": "1"}
    assert not gitlab.verify(late, BODY)


def test_with_both_an_unsigned_delivery_is_judged_by_its_token() -> None:
    gitlab = auth(["tok-old"], [SECRET])
    assert gitlab.verify({"x-gitlab-token": "tok-old"}, BODY)
    assert not gitlab.verify({"x-gitlab-token": "tok-new"}, BODY)
    assert not gitlab.verify({}, BODY)


def test_with_neither_every_delivery_is_refused() -> None:
    gitlab = auth([], [])
    assert not gitlab.verify({"x-gitlab-token": ""}, BODY)
    assert not gitlab.verify({"x-gitlab-token": "anything"}, BODY)
    assert not gitlab.verify(signed_headers(), BODY)


# --- Forgejo and Gitea: rotation --------------------------------------------------------


@pytest.mark.parametrize("secret", ["old-secret", "new-secret"])
def test_while_a_forgejo_secret_is_rotated_both_the_old_and_the_new_are_accepted(
    secret: str,
) -> None:
    forgejo = ForgejoSignature(["old-secret", "new-secret"])
    assert forgejo.verify(ForgejoSignature.sign(secret, BODY), BODY)
    assert forgejo.verify(ForgejoSignature.sign(secret, BODY + b"2"), BODY + b"2")  # again


@pytest.mark.parametrize("secret", ["unknown", "old-secre", "new-secret ", ""])
def test_a_forgejo_delivery_signed_with_an_unknown_secret_is_refused(secret: str) -> None:
    forgejo = ForgejoSignature(["old-secret", "new-secret"])
    assert not forgejo.verify(ForgejoSignature.sign(secret, BODY), BODY)


def test_a_forgejo_signature_is_compared_exactly() -> None:
    forgejo = ForgejoSignature(["old-secret"])
    good = ForgejoSignature.sign("old-secret", BODY)
    assert forgejo.verify(good, BODY)
    for bad in ("", good.upper(), good[:-1], good + "0", "sha256=" + good, good[1:]):
        assert not forgejo.verify(bad, BODY), bad
    assert not forgejo.verify(good, BODY + b" ")
    assert not ForgejoSignature([]).verify(good, BODY)


# --- the delivery log's retention ---------------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "kept"),
    [("1m", MIN_RETENTION), ("0s", MIN_RETENTION), ("23h", MIN_RETENTION), ("72h", 72 * 3600.0)],
)
def test_the_delivery_log_remembers_ids_at_least_a_day_whatever_the_configuration(
    tmp_path: Path, configured: str, kept: float
) -> None:
    routes = build_routes(
        config=make_config(deliveryRetention=configured),
        enqueue=lambda keys: None,
        status_cache=StatusCache(),
        sha_index=ShaIndex(),
        state_dir=tmp_path,
    )
    try:
        assert MIN_RETENTION == 86400.0
        assert routes.deliveries.retention == kept
        assert routes.deliveries.record("delivery-1")
        assert not routes.deliveries.record("delivery-1")
    finally:
        routes.close()
