"""What the HTTP layer needs from the daemon, and nothing more: two small ports.

The daemon's ``Runtime`` provides both structurally (``Commands`` with the audit of
writes); tests can hand the API any object that does. Every answer is typed: the API
serialises it (``Operations`` answers one of ``promoter.daemon.operation_results``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from promoter.config import PromotionStrategy
from promoter.daemon import (
    ApproveChangeResult,
    ApproveResult,
    FreezeResult,
    HoldResult,
    MergeResult,
    PinResult,
    PromoteResult,
    ReleaseResult,
    RevertResult,
    StrategyView,
    UnpinResult,
)
from promoter.models import CommitStatus, DryCommit
from promoter.state.audit_entry import AuditEntry, AuditPage, AuditQuery


class Views(Protocol):
    """Read-only: the configured strategies and what their last reconcile found."""

    @property
    def started(self) -> bool: ...

    def strategies(self) -> list[PromotionStrategy]: ...

    def strategy(self, name: str) -> PromotionStrategy | None: ...

    def view(self, name: str) -> StrategyView | None: ...

    def owner(self, name: str) -> str | None:
        """The replica that works on strategy ``name``; None when this process does them all."""
        ...

    def has_repository(self, name: str) -> bool: ...

    def readiness(self) -> tuple[bool, dict[str, str]]: ...

    def dry_history(self, name: str, *, limit: int) -> list[DryCommit]:
        """The newest ``limit`` commits of the strategy's dry branch (newest first)."""
        ...

    def parked(self) -> dict[str, str]: ...

    def scm_web(self, repo_name: str) -> tuple[str, str]:
        """A repository's clone URL and its SCM's kind (empty when unknown)."""
        ...

    def changed_files(self, name: str, environment: str) -> list[tuple[str, str]]:
        """``(status, path)`` of the hydrated files an environment's proposed commit
        changes from its active one; reads git: never call it on the event loop."""
        ...


class Operations(Protocol):
    """Manual operations on one environment (``OperationError`` when refused)."""

    def revert(
        self, strategy: str, environment: str, *, to: str | None, by: str
    ) -> RevertResult: ...

    def hold(
        self, strategy: str, environment: str, *, dry_sha: str | None, reason: str, by: str
    ) -> HoldResult: ...

    def release(
        self, strategy: str, environment: str, *, dry_sha: str | None, by: str, revert_holds: bool
    ) -> ReleaseResult: ...

    def promote(
        self, strategy: str, environment: str, *, reason: str, by: str
    ) -> PromoteResult: ...

    def merge(self, strategy: str, environment: str, *, by: str | None) -> MergeResult: ...

    def approve(self, strategy: str, environment: str, *, user: str) -> ApproveResult: ...

    def pin(self, strategy: str, environment: str, *, dry_sha: str, reason: str) -> PinResult: ...

    def unpin(self, strategy: str, environment: str) -> UnpinResult: ...

    def approve_change(self, strategy: str, *, dry_sha: str) -> ApproveChangeResult: ...


class Freezing(Protocol):
    """A person's freeze of everything, a strategy or an environment (``LookupError`` for an
    unknown one, or an unfreeze of a scope not frozen)."""

    def freeze(
        self, *, strategy: str | None, environment: str | None, reason: str, by: str
    ) -> FreezeResult: ...

    def unfreeze(
        self, *, strategy: str | None, environment: str | None, by: str
    ) -> FreezeResult: ...


class Audit(Protocol):
    """The audit of writes: recorded as they happen, read by the API."""

    def record(self, entry: AuditEntry) -> bool:
        """Whether the entry is kept: past its client's bound for the day it is not."""
        ...

    def entries(self, query: AuditQuery, repositories: Iterable[str]) -> AuditPage: ...


class Commands(Protocol):
    """Writes that reach the SCM or the queue."""

    @property
    def operations(self) -> Operations: ...

    @property
    def freezes(self) -> Freezing: ...

    def resolve_commit(self, repo_name: str, sha: str) -> str: ...

    def post_status(
        self, repo_name: str, sha: str, status: CommitStatus, *, force: bool = False
    ) -> list[str]: ...

    def enqueue(self, keys: list[str]) -> None: ...

    @property
    def audit(self) -> Audit: ...
