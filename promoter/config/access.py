"""The ``access:`` section of promoter.yaml: who may call the daemon, as whom, with what role.

A caller is named by an API token (``tokens``), by an authenticating proxy's identity
header (``proxy``, believed only from ``proxy.trustedAddresses``), by a sign-in with the
company's OpenID Connect provider (``oidc``: a session cookie) or, in Kubernetes mode, by a
TokenReview of its bearer token (``kubernetes.tokenReview``). ``grants``
give names and groups a role, scoped per strategy and environment. ``anonymous`` is the
role of a caller without credentials; ``hosts`` are the Host names the daemon answers to.
"""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from promoter.config.base import Spec
from promoter.config.durations import Duration
from promoter.config.secrets import SecretRef
from promoter.config.transport import is_loopback_host

Role = Literal["viewer", "operator", "approver", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "operator", "approver", "admin")

NAME_PATTERN = r"^[A-Za-z0-9@._:+\-/ ]+$"
"""A caller's name: a token's name, a proxy's user, a Kubernetes user (``system:...``)."""


class ApiToken(Spec):
    """One named API token: whoever sends it acts as ``name``."""

    name: str = Field(min_length=1, max_length=128, pattern=NAME_PATTERN)
    secret: SecretRef = Field(description="The token itself (a secret reference).")


class Proxy(Spec):
    """An authenticating proxy in front of the daemon (oauth2-proxy, Pomerium, ...)."""

    user_header: str = Field(
        default="X-Forwarded-User",
        min_length=1,
        description="The header naming the caller (oauth2-proxy: X-Forwarded-User or "
        "X-Forwarded-Email; Pomerium: X-Pomerium-Claim-Email).",
    )
    groups_header: str | None = Field(
        default=None, description="A header listing the caller's groups, comma-separated."
    )
    trusted_addresses: list[IPv4Network | IPv6Network] = Field(
        min_length=1,
        description="The proxy's own addresses (CIDR): the header is believed only from them.",
    )
    address_header: str | None = Field(
        default="X-Forwarded-For",
        min_length=1,
        description="The header the proxy adds its client's address to (X-Forwarded-For,"
        " X-Real-IP), believed only from trustedAddresses: the right-most address in it"
        " that is not the proxy's own is the client the audit records as forwarded.",
    )


class Oidc(Spec):
    """Sign-in with an OpenID Connect provider (authorization code with PKCE): the ID
    token's user and groups name the caller, kept in a signed session cookie."""

    issuer: str = Field(
        min_length=1,
        description="The provider's issuer URL; its /.well-known/openid-configuration is read.",
    )
    client_id: str = Field(min_length=1, description="The daemon's client ID at the provider.")
    client_secret: SecretRef | None = Field(
        default=None, description="The client's secret (none: a public client, PKCE alone)."
    )
    scopes: list[str] = Field(
        default_factory=lambda: ["openid", "email", "profile"],
        description="The scopes asked for (openid is always asked for).",
    )
    username_claim: str = Field(
        default="email", min_length=1, description="The ID token's claim naming the person."
    )
    groups_claim: str = Field(
        default="groups", min_length=1, description="The ID token's claim listing groups."
    )
    redirect_url: str | None = Field(
        default=None,
        description="Where the provider sends the browser back (default: daemon.publicUrl"
        " + /auth/callback).",
    )
    session_key: SecretRef | None = Field(
        default=None,
        description="The key that signs session cookies (default: a random key per process:"
        " sessions end when it restarts, and replicas do not share them).",
    )
    session_ttl: Duration = Field(
        default=8 * 3600.0, gt=0, description="How long a session lasts after sign-in."
    )
    timeout: Duration = Field(
        default=10.0, gt=0, description="Deadline of each call to the provider."
    )

    @model_validator(mode="after")
    def _https(self) -> Oidc:
        for name, url in (("issuer", self.issuer), ("redirectUrl", self.redirect_url or "")):
            parts = urlsplit(url)
            if url and (parts.scheme not in ("http", "https") or not parts.hostname):
                raise ValueError(f"oidc.{name} is not an http(s) URL: {url!r}")
            if url and parts.scheme == "http" and not is_loopback_host(parts.hostname or ""):
                raise ValueError(f"oidc.{name} must be https (http only on loopback): {url!r}")
        return self


class KubernetesAccess(Spec):
    token_review: bool = Field(
        default=False,
        description="Kubernetes mode: name a bearer token no API token matches by a TokenReview.",
    )
    audiences: list[str] = Field(
        default_factory=list, description="The audiences the TokenReview asks for (none: any)."
    )


class Grant(Spec):
    """A role for some names and groups, on some strategies and environments."""

    role: Role
    users: list[str] = Field(default_factory=list, description="Caller names.")
    groups: list[str] = Field(default_factory=list, description="Groups (proxy, Kubernetes).")
    strategies: list[str] = Field(
        default_factory=list, description="Strategy names or patterns (*, ?); empty: every one."
    )
    environments: list[str] = Field(
        default_factory=list,
        description="Environment branches, their last part, or patterns; empty: every one.",
    )

    @model_validator(mode="after")
    def _someone(self) -> Grant:
        if not self.users and not self.groups:
            raise ValueError("a grant names users or groups")
        return self


class Access(Spec):
    hosts: list[str] = Field(
        default_factory=list,
        description="Host names the daemon answers to besides loopback names, IP addresses,"
        " daemon.host and daemon.publicUrl's host; '*' turns the check off.",
    )
    anonymous: Role | Literal["none"] | None = Field(
        default=None,
        description="The role of a caller without credentials. Default: admin (as 'local')"
        " when the daemon listens on loopback and no credential is configured; else none.",
    )
    tokens: list[ApiToken] = Field(default_factory=list)
    proxy: Proxy | None = None
    oidc: Oidc | None = None
    kubernetes: KubernetesAccess = Field(default_factory=KubernetesAccess)
    grants: list[Grant] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_names(self) -> Access:
        names = [t.name for t in self.tokens]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"token names must be unique: {', '.join(twice)}")
        return self

    def has_credentials(self, *, api_token: bool) -> bool:
        """Whether any way of naming a caller is configured."""
        return (
            api_token
            or bool(self.tokens)
            or self.proxy is not None
            or self.oidc is not None
            or (self.kubernetes.token_review)
        )
