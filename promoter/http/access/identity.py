"""Who is calling: a named API token, a trusted proxy's identity header, a Kubernetes
TokenReview, or nobody (the local caller of a loopback daemon, or an anonymous one).

``Credentials.identify`` answers an ``Identity`` or an ``Unauthenticated`` reason (401).
A credential that is sent and wrong is refused, never taken as no credential; a proxy's
identity header is believed only from the proxy's own addresses, the peer that opened the
connection (``forwarded``: no forwarded header moves it).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from promoter.config import Proxy
from promoter.errors import ConfigError
from promoter.http.access.forwarded import Forwarding

Via = Literal["token", "proxy", "kubernetes", "oidc", "local", "anonymous"]

FORWARDED = ("forwarded", "x-forwarded-for", "x-real-ip")
"""Headers a reverse proxy adds: a request carrying one did not come from this machine's
user directly, whatever its peer address says."""

MAX_NAME = 256


@dataclass(frozen=True)
class Identity:
    """A caller: ``name`` is what the audit and the approvals record."""

    name: str
    via: Via
    groups: tuple[str, ...] = ()

    @property
    def credentialed(self) -> bool:
        return self.via not in ("local", "anonymous")


@dataclass(frozen=True)
class Unauthenticated:
    """Credentials were sent and are not accepted (401), with why."""

    reason: str


TokenReview = Callable[[str], "Identity | None"]
"""A Kubernetes TokenReview: the token's user, or None when the API server refuses it.
Blocking (it calls the API server): run in the thread pool."""


class Credentials:
    """Identifies callers from the configured tokens, proxy and TokenReview."""

    def __init__(
        self,
        *,
        tokens: Mapping[str, str],
        proxy: Proxy | None = None,
        review: TokenReview | None = None,
        local: bool = False,
        review_ttl: float = 60.0,
    ) -> None:
        """``tokens`` maps each caller's name to its token; ``local``: the daemon listens
        on loopback only, so a caller without credentials is this machine's user."""
        if any(not token.strip() for token in tokens.values()):
            raise ConfigError(["an API token must not be empty or only whitespace"])
        self._tokens = [(name, token.encode()) for name, token in tokens.items()]
        self._proxy = proxy
        self.forwarding = (
            Forwarding(proxy.trusted_addresses, proxy.address_header)
            if proxy
            else Forwarding((), None)
        )
        self._review = review
        self._local = local
        self._ttl = review_ttl
        self._reviewed: dict[str, tuple[float, Identity | None]] = {}

    async def identify(self, request: Request) -> Identity | Unauthenticated:
        proxied = self._from_proxy(request)
        if proxied is not None:
            return proxied
        header = request.headers.get("authorization")
        if header is not None:
            return await self._bearer(header)
        if self._local and not any(h in request.headers for h in FORWARDED):
            return Identity("local", "local")
        return Identity("anonymous", "anonymous")

    def _from_proxy(self, request: Request) -> Identity | Unauthenticated | None:
        if self._proxy is None:
            return None
        user = request.headers.get(self._proxy.user_header)
        if user is None:
            return None
        if not self.forwarding.trusted_peer(request):
            return Unauthenticated(
                f"{self._proxy.user_header} is believed only from the trusted proxy's addresses"
            )
        user = user.strip()
        if not user or len(user) > MAX_NAME:
            return Unauthenticated(f"{self._proxy.user_header} names no user")
        groups: tuple[str, ...] = ()
        if self._proxy.groups_header:
            raw = request.headers.get(self._proxy.groups_header, "")
            groups = tuple(g.strip() for g in raw.split(",") if g.strip())
        return Identity(user, "proxy", groups)

    async def _bearer(self, header: str) -> Identity | Unauthenticated:
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            return Unauthenticated("the Authorization header is not 'Bearer TOKEN'")
        found = None
        for name, token in self._tokens:
            if hmac.compare_digest(value.encode(), token):
                found = name
        if found is not None:
            return Identity(found, "token")
        if self._review is not None:
            reviewed = await run_in_threadpool(self._reviewed_identity, value)
            if reviewed is not None:
                return reviewed
        return Unauthenticated("the bearer token is not accepted")

    def _reviewed_identity(self, token: str) -> Identity | None:
        """The TokenReview's answer, kept ``review_ttl`` seconds by the token's digest."""
        assert self._review is not None
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        cached = self._reviewed.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        identity = self._review(token)
        if len(self._reviewed) > 4096:
            self._reviewed.clear()
        self._reviewed[key] = (now + self._ttl, identity)
        return identity
