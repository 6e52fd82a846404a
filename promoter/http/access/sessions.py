"""Signed cookies: a signed-in person's session, and a sign-in in progress.

A cookie's value is a JSON payload and its HMAC-SHA256 under the session key, both
base64url: one signed with another key, changed, or past its expiry is no cookie of
ours. A session names the person and the groups that matter here, and carries its id and
its CSRF token: a write through a session must send that token (``X-CSRF-Token``), which
the daemon's own pages hold and a page of another site cannot read. Signing out revokes
the session's id until it would have expired, so a copy of the cookie stops working too.
Cookies are ``HttpOnly``, ``SameSite=Lax``, and ``Secure`` (with the ``__Host-`` prefix)
when the daemon is reached over https.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import string
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

CSRF_HEADER = "x-csrf-token"
PENDING_TTL = 600.0
"""A sign-in must come back from the provider within ten minutes."""
MAX_COOKIE = 3800
"""Browsers keep about 4 KB a cookie."""
MAX_REMEMBERED = 10_000
"""Revoked sessions and finished sign-ins remembered at most (the oldest go first)."""
ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")
"""The characters of unpadded base64url, all ``_b64`` writes."""


@dataclass(frozen=True)
class Session:
    """A signed-in person."""

    name: str
    groups: tuple[str, ...]
    sid: str
    csrf: str
    expires: float


@dataclass(frozen=True)
class Pending:
    """A sign-in sent to the provider: what its answer must match, and where to go after."""

    state: str
    nonce: str
    verifier: str
    next: str
    expires: float

    @property
    def challenge(self) -> str:
        """PKCE's S256 challenge of the verifier."""
        digest = hashlib.sha256(self.verifier.encode()).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class Signer:
    """HMAC-SHA256 over a JSON payload, with its expiry inside."""

    def __init__(self, key: bytes, purpose: str) -> None:
        self._key = hmac.new(key, purpose.encode(), hashlib.sha256).digest()

    def dumps(self, payload: dict[str, Any]) -> str:
        body = _b64(json.dumps(payload, separators=(",", ":")).encode())
        return f"{body}.{_b64(self._mac(body))}"

    def loads(self, value: str, now: float) -> dict[str, Any] | None:
        """The payload, or None when the value is not ours, was changed, or has expired."""
        body, _, mac = value.partition(".")
        try:
            given = _unb64(mac)
            if not hmac.compare_digest(given, self._mac(body)):
                return None
            payload = json.loads(_unb64(body))
        except ValueError:
            return None
        if not isinstance(payload, dict) or not isinstance(payload.get("exp"), int | float):
            return None
        return payload if payload["exp"] > now else None

    def _mac(self, body: str) -> bytes:
        return hmac.new(self._key, body.encode(), hashlib.sha256).digest()


class Remembered:
    """Ids kept until their expiry (revoked sessions, finished sign-ins), bounded."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, key: str, until: float, now: float) -> bool:
        """Remember ``key``; False when it was already remembered."""
        with self._lock:
            if self._until.get(key, 0.0) > now:
                return False
            if len(self._until) >= MAX_REMEMBERED:
                for old in [k for k, t in self._until.items() if t <= now]:
                    del self._until[old]
                while len(self._until) >= MAX_REMEMBERED:
                    del self._until[next(iter(self._until))]
            self._until[key] = until
            return True

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._until


class Sessions:
    """The session and sign-in cookies, made and read."""

    def __init__(
        self, key: bytes, *, ttl: float, secure: bool, clock: Callable[[], float] = time.time
    ) -> None:
        self._session = Signer(key, "promoter session")
        self._pending = Signer(key, "promoter sign-in")
        self.ttl = ttl
        self.secure = secure
        self._clock = clock
        self.revoked = Remembered()
        self.finished = Remembered()
        """The states of sign-ins that came back: a second callback with one is refused."""
        prefix = "__Host-" if secure else ""
        self.session_cookie = f"{prefix}promoter-session"
        self.pending_cookie = f"{prefix}promoter-sign-in"

    def start(self, name: str, groups: tuple[str, ...]) -> tuple[Session, str]:
        """A new session for ``name`` and the cookie's value."""
        session = Session(
            name=name,
            groups=groups,
            sid=secrets.token_urlsafe(16),
            csrf=secrets.token_urlsafe(24),
            expires=self._clock() + self.ttl,
        )
        payload = {
            "n": session.name,
            "g": list(session.groups),
            "sid": session.sid,
            "csrf": session.csrf,
            "exp": session.expires,
        }
        value = self._session.dumps(payload)
        if len(value) > MAX_COOKIE:
            raise ValueError("the session does not fit in a cookie")
        return session, value

    def read(self, request: Request) -> Session | None:
        """The request's session, or None (none sent, not ours, expired or revoked)."""
        value = request.cookies.get(self.session_cookie)
        if not value:
            return None
        payload = self._session.loads(value, self._clock())
        if payload is None:
            return None
        try:
            session = Session(
                name=str(payload["n"]),
                groups=tuple(str(g) for g in payload["g"]),
                sid=str(payload["sid"]),
                csrf=str(payload["csrf"]),
                expires=float(payload["exp"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
        return None if session.sid in self.revoked else session

    def sent(self, request: Request) -> bool:
        """Whether the request carries a session cookie at all (good or not)."""
        return bool(request.cookies.get(self.session_cookie))

    def revoke(self, session: Session) -> None:
        self.revoked.add(session.sid, session.expires, self._clock())

    def begin(self, next_path: str) -> tuple[Pending, str]:
        """A sign-in in progress (state, nonce, PKCE verifier) and its cookie's value."""
        pending = Pending(
            state=secrets.token_urlsafe(24),
            nonce=secrets.token_urlsafe(24),
            verifier=secrets.token_urlsafe(48),
            next=next_path,
            expires=self._clock() + PENDING_TTL,
        )
        payload = {
            "s": pending.state,
            "n": pending.nonce,
            "v": pending.verifier,
            "next": pending.next,
            "exp": pending.expires,
        }
        return pending, self._pending.dumps(payload)

    def pending(self, request: Request) -> Pending | None:
        value = request.cookies.get(self.pending_cookie)
        payload = self._pending.loads(value, self._clock()) if value else None
        if payload is None:
            return None
        try:
            return Pending(
                state=str(payload["s"]),
                nonce=str(payload["n"]),
                verifier=str(payload["v"]),
                next=str(payload["next"]),
                expires=float(payload["exp"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def finish(self, pending: Pending) -> bool:
        """Mark the sign-in come back; False when it had already (a replayed callback)."""
        return self.finished.add(pending.state, pending.expires, self._clock())

    def set(self, response: Response, name: str, value: str, max_age: float) -> None:
        response.set_cookie(
            name,
            value,
            max_age=int(max_age),
            path="/",
            secure=self.secure,
            httponly=True,
            samesite="lax",
        )

    def clear(self, response: Response, name: str) -> None:
        response.delete_cookie(name, path="/", secure=self.secure, httponly=True, samesite="lax")

    def csrf_ok(self, session: Session, request: Request, form_token: str = "") -> bool:
        """Whether a write carries the session's CSRF token (header, or a form's field)."""
        given = request.headers.get(CSRF_HEADER) or form_token
        return bool(given) and hmac.compare_digest(given.encode(), session.csrf.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """``_b64``'s text decoded, strictly: a character outside its alphabet (a dot, ``=``,
    ``+``, ``/``) is refused, where the decoder alone would skip it or take it."""
    if not ALPHABET.issuperset(text):
        raise ValueError
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
