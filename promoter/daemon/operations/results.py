"""What each manual operation answers once done: one frozen value per operation.

The API serialises them field by field, in this order, in camelCase (``dry_sha`` is
``drySha``; ``from_`` is ``from``); docs/api.md shows the answers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HoldResult:
    held: str
    """The dry SHA held."""
    environments: tuple[str, ...]
    """The environment and every later one: the hold keeps it out of each."""
    reason: str


@dataclass(frozen=True)
class ReleaseResult:
    released: tuple[str, ...]
    """The dry SHAs whose holds were lifted."""
    environments: tuple[str, ...]
    unpaused: str | None
    """The environment, when it was paused (``None`` when it was not)."""
    paused_for: str | None
    """Why it was paused."""


@dataclass(frozen=True)
class RevertResult:
    reverting: str
    """The environment reverted."""
    to: str
    """The dry SHA it goes back to."""
    from_: str
    """The bad dry SHA it leaves."""


@dataclass(frozen=True)
class PromoteResult:
    promoted: str
    """The dry SHA promoted past the gates (break glass)."""
    environment: str
    pr: int


@dataclass(frozen=True)
class MergeResult:
    merged: int
    """The pull request merged."""
    environment: str
    dry_sha: str
    revert: bool
    """Whether it was a revert's pull request."""


@dataclass(frozen=True)
class ApproveResult:
    approved: int
    """The pull request approved."""
    environment: str
    user: str


@dataclass(frozen=True)
class PinResult:
    pinned: str
    """The dry SHA the environment is pinned to."""
    environment: str
    reason: str


@dataclass(frozen=True)
class UnpinResult:
    unpinned: str
    """The environment whose pin was lifted."""


@dataclass(frozen=True)
class ApproveChangeResult:
    approved: str
    """The dry SHA let through."""
    environments: tuple[str, ...]
    """The environments that block changes (``blockedChanges``): it may pass them now."""


OperationResult = (
    HoldResult
    | ReleaseResult
    | RevertResult
    | PromoteResult
    | MergeResult
    | ApproveResult
    | PinResult
    | UnpinResult
    | ApproveChangeResult
)
