"""Sign-in with the company's identity provider (``access.oidc``): the provider's ID token
names a person and their groups, the groups are given roles by the same grants as
tokens and proxies (``access.grants``), and a session cookie carries them afterwards.

``begin`` sends a browser to the provider; ``complete`` takes it back: the state it
carries must be this browser's sign-in, not one already completed; the code is exchanged
once, with its PKCE verifier; the ID token must verify; the person must have a role here.
``identify`` names the caller of a request from its session cookie, and refuses a write
that does not send the session's CSRF token.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

from promoter.config import Grant, Oidc
from promoter.http.access.identity import MAX_NAME, Identity, Unauthenticated
from promoter.http.access.oidc import Provider, Refused
from promoter.http.access.roles import Policy
from promoter.http.access.sessions import Pending, Session, Sessions

log = logging.getLogger("promoter.sign_in")

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
LOGIN, CALLBACK, LOGOUT = "/auth/login", "/auth/callback", "/auth/logout"


class NoRole(Refused):
    """The provider signed the person in, but no grant gives them a role here (403)."""


@dataclass(frozen=True)
class Completed:
    """A sign-in that came back good: who, the session's cookie, and where to go."""

    identity: Identity
    session: Session
    cookie: str
    next: str


class SignIn:
    """The provider, the session cookies and the grants, for the routes under ``/auth``."""

    def __init__(
        self,
        provider: Provider,
        sessions: Sessions,
        *,
        username_claim: str,
        groups_claim: str,
        grants: Sequence[Grant],
    ) -> None:
        self.provider = provider
        self.sessions = sessions
        self._username = username_claim
        self._groups = groups_claim
        self._named = {g for grant in grants for g in grant.groups}
        """Only groups some grant names are kept in the cookie: no other matters here."""

    @classmethod
    def from_config(cls, oidc: Oidc, *, public_url: str | None, grants: Sequence[Grant]) -> SignIn:
        redirect = oidc.redirect_url or (public_url or "").rstrip("/") + CALLBACK
        secure = urlsplit(redirect).scheme == "https"
        key = oidc.session_key.resolve().encode() if oidc.session_key else secrets.token_bytes(32)
        provider = Provider(
            issuer=oidc.issuer,
            client_id=oidc.client_id,
            client_secret=oidc.client_secret.resolve() if oidc.client_secret else None,
            redirect_uri=redirect,
            scopes=list(oidc.scopes),
            timeout=oidc.timeout,
        )
        sessions = Sessions(key, ttl=oidc.session_ttl, secure=secure)
        return cls(
            provider,
            sessions,
            username_claim=oidc.username_claim,
            groups_claim=oidc.groups_claim,
            grants=grants,
        )

    def identify(self, request: Request) -> Identity | Unauthenticated | None:
        """The signed-in caller (None: no session cookie sent)."""
        if not self.sessions.sent(request):
            return None
        session = self.sessions.read(request)
        if session is None:
            return Unauthenticated("the session has ended or is not this daemon's: sign in again")
        if request.method not in SAFE_METHODS and not self.sessions.csrf_ok(session, request):
            return Unauthenticated(
                "a write through a signed-in session must send its CSRF token (X-CSRF-Token)"
            )
        return Identity(session.name, "oidc", session.groups)

    def begin(self, next_path: str) -> tuple[str, str]:
        """The provider's URL to send the browser to, and the sign-in cookie's value.
        Blocking (the discovery document): run it in the thread pool."""
        pending, cookie = self.sessions.begin(local_path(next_path))
        url = self.provider.authorization_url(
            state=pending.state, nonce=pending.nonce, challenge=pending.challenge
        )
        return url, cookie

    def complete(self, request: Request, policy: Policy) -> Completed:
        """The person the provider's answer names, once everything checks (Refused).
        Blocking (the code's exchange, the provider's keys): run it in the thread pool."""
        params = request.query_params
        if params.get("error"):
            said = params.get("error_description") or params["error"]
            raise Refused(f"the provider did not sign you in: {said[:200]}")
        pending = self.sessions.pending(request)
        if pending is None:
            raise Refused("this browser started no sign-in, or it took over ten minutes")
        if not hmac.compare_digest(params.get("state", "").encode(), pending.state.encode()):
            raise Refused("the answer's state is not this browser's sign-in")
        if not self.sessions.finish(pending):
            raise Refused("this sign-in was completed already")
        code = params.get("code", "")
        if not code:
            raise Refused("the provider's answer carries no code")
        claims = self.provider.verify(
            self.provider.exchange(code=code, verifier=pending.verifier), nonce=pending.nonce
        )
        identity = self._identity(claims)
        if not policy.allows(identity, "viewer"):
            groups = ", ".join(identity.groups) or "none this daemon's grants name"
            raise NoRole(
                f"{identity.name} signed in, but no grant gives them or their groups"
                f" ({groups}) a role here: ask an admin for one in access.grants"
            )
        session, cookie = self.sessions.start(identity.name, identity.groups)
        log.info("signed in", extra={"who": identity.name, "via": "oidc"})
        return Completed(identity, session, cookie, _next(pending))

    def _identity(self, claims: Mapping[str, Any]) -> Identity:
        name = claims.get(self._username)
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
            raise Refused(f"the ID token's {self._username!r} claim names nobody")
        if self._username == "email" and claims.get("email_verified") is False:
            raise Refused("the provider has not verified this e-mail address")
        raw = claims.get(self._groups) or []
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            raise Refused(f"the ID token's {self._groups!r} claim is not a list")
        groups = tuple(sorted({str(g) for g in raw if str(g) in self._named}))
        return Identity(name.strip(), "oidc", groups)


def local_path(path: str) -> str:
    """A path of this daemon to go back to: never another site's (``//host``, a scheme)."""
    parts = urlsplit(path)
    if not path.startswith("/") or path.startswith("//") or parts.scheme or parts.netloc:
        return "/"
    if "\\" in path or any(ord(c) < 32 for c in path):
        return "/"
    return path


def _next(pending: Pending) -> str:
    return local_path(pending.next)


__all__ = ["CALLBACK", "LOGIN", "LOGOUT", "Completed", "NoRole", "Refused", "SignIn", "local_path"]
