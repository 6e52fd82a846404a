"""Authentication of deliveries: GitHub's HMAC signature, GitLab's token and signed
deliveries (and which of them decides, ``GitLabAuth``), Forgejo's and Gitea's signature.

Every comparison is constant-time (``hmac.compare_digest`` on bytes) and every
configured secret is tried, so that a secret can be rotated by configuring the
old and the new one side by side. Header values arrive as latin-1 text (ASGI);
they are compared as the bytes that were sent.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Callable, Mapping, Sequence

from promoter.errors import ConfigError

SIGNATURE_TOLERANCE = 300.0
"""Signed GitLab deliveries older (or further in the future) than this are refused, in seconds."""


_MAX_SIGNATURES = 16
"""At most this many space-separated signatures are looked at (a handful during key rotation)."""


def refuse_empty(secrets: Sequence[str], what: str) -> None:
    """An empty key would accept whatever anyone signs with it: refused at start-up."""
    if any(not s.strip() for s in secrets):
        raise ConfigError([f"a {what} must not be empty or only whitespace"])


def _header_bytes(value: str) -> bytes:
    return value.encode("latin-1", errors="replace")


class GitHubSignature:
    """``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw body>``."""

    def __init__(self, secrets: Sequence[str]) -> None:
        refuse_empty(secrets, "GitHub webhook secret")
        self._keys = [s.encode("utf-8") for s in secrets]

    def __bool__(self) -> bool:
        return bool(self._keys)

    @staticmethod
    def sign(secret: str, body: bytes) -> str:
        """The header value GitHub would send (for tests and benchmarks)."""
        return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()

    def verify(self, header: str | None, body: bytes) -> bool:
        if not header or not header.startswith("sha256="):
            return False
        try:
            given = bytes.fromhex(header[7:])
        except ValueError:
            return False
        ok = False
        for key in self._keys:  # every secret, so the time does not say which one matched
            ok |= hmac.compare_digest(hmac.digest(key, body, "sha256"), given)
        return ok


class GitLabToken:
    """``X-Gitlab-Token``: a shared secret sent as is, compared for equality."""

    def __init__(self, tokens: Sequence[str]) -> None:
        refuse_empty(tokens, "GitLab webhook token")
        self._tokens = [t.encode("utf-8") for t in tokens]

    def __bool__(self) -> bool:
        return bool(self._tokens)

    def verify(self, header: str | None) -> bool:
        if not header:
            return False
        given = _header_bytes(header)
        ok = False
        for token in self._tokens:
            ok |= hmac.compare_digest(token, given)
        return ok


def decode_signing_secret(secret: str) -> bytes:
    """The key of a ``whsec_<base64>`` secret (Standard Webhooks); ConfigError when malformed."""
    try:
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(["a GitLab webhook signing secret must be whsec_<base64>"]) from exc
    if not key:
        raise ConfigError(["a GitLab webhook signing secret must not be empty"])
    return key


class SignedDelivery:
    """Standard-Webhooks signature: ``webhook-signature: v1,<base64 HMAC-SHA256>`` entries.

    The signed content is ``{webhook-id}.{webhook-timestamp}.{body}``; any ``v1`` entry
    of the space-separated list may match any configured key. The timestamp must be
    within ``tolerance`` seconds of now, which bounds replays of a captured delivery.
    """

    def __init__(
        self,
        secrets: Sequence[str],
        *,
        tolerance: float = SIGNATURE_TOLERANCE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._keys = [decode_signing_secret(s) for s in secrets]
        self._tolerance = tolerance
        self._clock = clock

    def __bool__(self) -> bool:
        return bool(self._keys)

    @staticmethod
    def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
        """The header value GitLab would send (for tests)."""
        key = decode_signing_secret(secret)
        content = f"{msg_id}.{timestamp}.".encode() + body
        digest = hmac.new(key, content, hashlib.sha256).digest()
        return "v1," + base64.b64encode(digest).decode("ascii")

    def verify(
        self, msg_id: str | None, timestamp: str | None, signature: str | None, body: bytes
    ) -> bool:
        if not msg_id or not timestamp or not signature:
            return False
        if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
            return False
        if abs(self._clock() - int(timestamp)) > self._tolerance:
            return False
        content = _header_bytes(msg_id) + b"." + timestamp.encode("ascii") + b"." + body
        expected = [
            base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()) for key in self._keys
        ]
        ok = False
        for entry in signature.split(" ")[:_MAX_SIGNATURES]:
            version, _, value = entry.partition(",")
            if version != "v1":
                continue
            given = _header_bytes(value)
            for digest in expected:
                ok |= hmac.compare_digest(digest, given)
        return ok


class GitLabAuth:
    """A GitLab delivery's proof: its signature decides when it sends one and signing
    secrets are configured (a bad one is refused even with a right token); else its token
    does. With signing secrets alone, an unsigned delivery has no token to match."""

    def __init__(
        self,
        tokens: Sequence[str],
        signing_secrets: Sequence[str] = (),
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._token = GitLabToken(tokens)
        self._signed = SignedDelivery(signing_secrets, clock=clock)

    def verify(self, headers: Mapping[str, str], body: bytes) -> bool:
        signature = headers.get("webhook-signature")
        if signature is not None and self._signed:
            return self._signed.verify(
                headers.get("webhook-id"), headers.get("webhook-timestamp"), signature, body
            )
        return self._token.verify(headers.get("x-gitlab-token"))


class ForgejoSignature:
    """Forgejo's and Gitea's signature: the hex HMAC-SHA256 of the body, compared in
    constant time against every secret (several while one is rotated)."""

    def __init__(self, secrets: Sequence[str]) -> None:
        refuse_empty(secrets, "Forgejo webhook secret")
        self._macs = [hmac.new(s.encode("utf-8"), digestmod=hashlib.sha256) for s in secrets]

    @staticmethod
    def sign(secret: str, body: bytes) -> str:
        """The header value Forgejo would send (for tests)."""
        return hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()

    def verify(self, header: str, body: bytes) -> bool:
        if not header:
            return False
        given = _header_bytes(header)
        ok = False
        for base in self._macs:
            mac = base.copy()
            mac.update(body)
            ok |= hmac.compare_digest(mac.hexdigest().encode("ascii"), given)
        return ok
