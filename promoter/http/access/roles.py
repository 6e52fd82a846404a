"""Roles: what a caller may do, on which strategies and environments.

``viewer`` reads; ``operator`` also holds, releases the holds people set, refreshes,
pins, unpins, reverts and sets commit statuses; ``approver`` also approves, merges what
waits for a person and lets blocked changes through; ``admin`` may do everything,
break-glass promotion and releasing a hold a revert set included. ``Policy.require``
is the one check every write makes (and a new operation calls).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from promoter.config import ROLES, Grant, Role, short_name
from promoter.http.access.identity import Identity

COVERS: dict[Role, frozenset[Role]] = {
    "viewer": frozenset({"viewer"}),
    "operator": frozenset({"viewer", "operator"}),
    "approver": frozenset({"viewer", "approver"}),
    "admin": frozenset({"viewer", "operator", "approver", "admin"}),
}
"""The roles each role includes."""

OPERATION_ROLES: dict[str, Role] = ROLES
"""The role each write needs, from the table of operations (``promoter.config.operations``);
releasing a hold a revert set needs ``admin`` too."""

API_TOKEN_NAME = "api-token"
"""The caller named by ``daemon.apiToken``, the one shared token (admin everywhere)."""


class Forbidden(Exception):
    """The caller lacks the role (403); the message says which, and where."""


@dataclass(frozen=True)
class Scope:
    """Where a call acts: a strategy and the environment branches it touches (none: any
    one of them will do, as for reading the strategy or refreshing it)."""

    strategy: str
    environments: tuple[str, ...] = ()


class Policy:
    """The grants of ``access.grants``, plus the roles given without a grant: the
    credential-less caller's (``anonymous``) and the shared ``daemon.apiToken``'s."""

    def __init__(
        self, grants: Sequence[Grant], *, anonymous: Role | None, api_token: bool = False
    ) -> None:
        """``anonymous``: the role of a caller without credentials (``local`` on a loopback
        daemon); one that came through a reverse proxy gets no more than ``viewer``."""
        self.grants = list(grants)
        self.anonymous = anonymous
        self.api_token = api_token

    def allows(self, identity: Identity, role: Role, scope: Scope | None = None) -> bool:
        """Whether ``identity`` has ``role`` on every environment of ``scope`` (None:
        anywhere, as for reading the list of strategies)."""
        given = self._given(identity)
        if given is not None:
            return role in COVERS[given]
        grants = [g for g in self.grants if role in COVERS[g.role] and _names(g, identity)]
        if scope is None:
            return bool(grants)
        if not scope.environments:
            return any(_covers(g, scope.strategy, None) for g in grants)
        return all(
            any(_covers(g, scope.strategy, environment) for g in grants)
            for environment in scope.environments
        )

    def require(self, identity: Identity, role: Role, scope: Scope) -> None:
        """``Forbidden`` unless ``identity`` has ``role`` on all of ``scope``."""
        if self.allows(identity, role, scope):
            return
        where = scope.strategy + (
            f" ({', '.join(scope.environments)})" if scope.environments else ""
        )
        raise Forbidden(f"{identity.name} needs the {role} role on {where}")

    def roles(self, identity: Identity) -> list[dict[str, object]]:
        """What ``identity`` was given, for ``GET /api/v1/whoami``."""
        given = self._given(identity)
        if given is not None:
            return [{"role": given, "strategies": [], "environments": []}]
        return [
            {"role": g.role, "strategies": g.strategies, "environments": g.environments}
            for g in self.grants
            if _names(g, identity)
        ]

    def _given(self, identity: Identity) -> Role | None:
        """The role a caller has without a grant, if it is such a caller."""
        if identity.via == "local":
            return self.anonymous
        if identity.via == "anonymous":
            return "viewer" if self.anonymous is not None else None
        if identity.via == "token" and identity.name == API_TOKEN_NAME and self.api_token:
            return "admin"
        return None


def _names(grant: Grant, identity: Identity) -> bool:
    if not identity.credentialed:
        return False
    return identity.name in grant.users or any(g in grant.groups for g in identity.groups)


def _covers(grant: Grant, strategy: str, environment: str | None) -> bool:
    """Whether ``grant`` reaches ``environment`` of ``strategy`` (None: some environment)."""
    if grant.strategies and not _matches(grant.strategies, strategy):
        return False
    if not grant.environments or environment is None:
        return True
    return _matches(grant.environments, environment) or _matches(
        grant.environments, short_name(environment)
    )


def _matches(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)
