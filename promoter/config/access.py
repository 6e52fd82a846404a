"""The ``access:`` section of promoter.yaml: who may call the daemon, as whom, with what role.

A caller is named by an API token (``tokens``), by an authenticating proxy's identity
header (``proxy``, believed only from ``proxy.trustedAddresses``) or, in Kubernetes
mode, by a TokenReview of its bearer token (``kubernetes.tokenReview``). ``grants``
give names and groups a role, scoped per strategy and environment. ``anonymous`` is the
role of a caller without credentials; ``hosts`` are the Host names the daemon answers to.
"""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network
from typing import Literal

from pydantic import Field, model_validator

from promoter.config.base import Spec
from promoter.config.secrets import SecretRef

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
            or (self.kubernetes.token_review)
        )
