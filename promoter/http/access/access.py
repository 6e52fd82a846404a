"""The daemon's access rules, put together from the configuration: who a request is
(``identity.Credentials``, or a signed-in session: ``sign_in.SignIn``), what it may do
(``roles.Policy``), the Host names it answers to (``guard.Hosts``) and the origin of its
own pages. A credential sent with the request (a bearer token, a proxy's header) goes
before a session cookie.

With no credential configured, a daemon listening on loopback takes every caller of
this machine as ``local``, an admin (the demo's and the README's set-up); the browser
checks still apply to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import Request

from promoter.config import Config
from promoter.config.transport import is_loopback_host
from promoter.errors import ConfigError
from promoter.http.access.guard import Hosts, origin_of
from promoter.http.access.identity import Credentials, Identity, TokenReview, Unauthenticated
from promoter.http.access.roles import API_TOKEN_NAME, Policy
from promoter.http.access.sign_in import SignIn

WILDCARDS = ("0.0.0.0", "::", "")


@dataclass
class AccessControl:
    credentials: Credentials
    policy: Policy
    hosts: Hosts
    public_origin: str | None = None
    sign_in: SignIn | None = None
    """Sign-in with the company's identity provider (``access.oidc``), when configured."""

    @classmethod
    def from_config(cls, config: Config, *, review: TokenReview | None = None) -> AccessControl:
        """The rules of ``config.access`` and ``daemon``; ``review``: Kubernetes mode's
        TokenReview (``access.kubernetes.tokenReview``). ConfigError when they clash."""
        access, daemon = config.access, config.daemon
        tokens = {t.name: t.secret.resolve() for t in access.tokens}
        shared = daemon.api_token.resolve() if daemon.api_token else None
        if shared is not None:
            if API_TOKEN_NAME in tokens:
                raise ConfigError([f"access.tokens: {API_TOKEN_NAME!r} is daemon.apiToken's name"])
            tokens[API_TOKEN_NAME] = shared
        if access.kubernetes.token_review and review is None:
            raise ConfigError(["access.kubernetes.tokenReview: only in Kubernetes mode"])
        loopback = is_loopback_host(daemon.host)
        anonymous = access.anonymous
        if anonymous is None:
            credentialed = access.has_credentials(api_token=shared is not None)
            anonymous = "admin" if loopback and not credentialed else "none"
        if anonymous not in ("none", "viewer") and not loopback:
            raise ConfigError(
                [
                    f"access.anonymous: {anonymous} is only for a daemon listening on loopback"
                    f" (daemon.host is {daemon.host}); give callers tokens or a proxy instead"
                ]
            )
        names = [*access.hosts, urlsplit(daemon.public_url or "").hostname or ""]
        if daemon.host not in WILDCARDS:
            names.append(daemon.host)
        return cls(
            credentials=Credentials(
                tokens=tokens,
                proxy=access.proxy,
                review=review if access.kubernetes.token_review else None,
                local=loopback,
            ),
            policy=Policy(
                access.grants,
                anonymous=None if anonymous == "none" else anonymous,
                api_token=shared is not None,
            ),
            hosts=Hosts(names),
            public_origin=origin_of(daemon.public_url),
            sign_in=_sign_in(config),
        )

    @classmethod
    def local(cls) -> AccessControl:
        """A loopback daemon without credentials: every caller is ``local``, an admin."""
        return cls(Credentials(tokens={}, local=True), Policy([], anonymous="admin"), Hosts([]))

    async def identify(self, request: Request) -> Identity | Unauthenticated:
        found = await self.credentials.identify(request)
        if self.sign_in is None or isinstance(found, Unauthenticated) or found.credentialed:
            return found
        return self.sign_in.identify(request) or found

    def forwarded_client(self, request: Request) -> str | None:
        """The client the trusted proxy says it forwards (None from any other peer)."""
        return self.credentials.forwarding.client(request)


def _sign_in(config: Config) -> SignIn | None:
    """``access.oidc``'s sign-in: it needs a URL the provider sends browsers back to."""
    oidc = config.access.oidc
    if oidc is None:
        return None
    if not oidc.redirect_url and not config.daemon.public_url:
        raise ConfigError(
            [
                "access.oidc: set daemon.publicUrl (or oidc.redirectUrl): the provider sends"
                " browsers back to its /auth/callback"
            ]
        )
    return SignIn.from_config(
        oidc, public_url=config.daemon.public_url, grants=config.access.grants
    )
