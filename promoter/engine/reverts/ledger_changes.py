"""What a ledger action writes: the change to each environment's ledger it touches, and
how it is told (log level and message, observer event). Pure; the executor writes it.

A revert, once its commit is pushed and its pull request open (``RevertOpened``), is
recorded in its environment and holds the bad dry SHA there and in every later
environment (exactly in ``hold_in`` when the engine named them); every other action
changes the ledger of its own environment only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, assert_never

from promoter.engine.core.actions import (
    Announce,
    ApproveChange,
    HoldDryCommit,
    OpenRevert,
    PauseEnvironment,
    PinEnvironment,
    RecordHealthy,
    RecordOverride,
    ReleaseHold,
    ResumeEnvironment,
)
from promoter.engine.core.ledger_state import (
    Announcement,
    EnvLedger,
    HealthyRecord,
    Hold,
    Override,
    Pin,
    Revert,
)

Change = Callable[[EnvLedger], EnvLedger]

LedgerAction = (
    RecordHealthy
    | ReleaseHold
    | HoldDryCommit
    | ResumeEnvironment
    | PinEnvironment
    | ApproveChange
    | Announce
    | PauseEnvironment
    | RecordOverride
)


@dataclass(frozen=True)
class RevertOpened:
    """An ``OpenRevert`` carried out: its branch and commit pushed, its pull request open."""

    action: OpenRevert
    branch: str
    commit: str
    number: int


@dataclass(frozen=True)
class LedgerChanges:
    """The changes to write, by environment branch, and how to tell them."""

    environment: str
    """The environment branch the action is about (the one its log line and event name)."""
    changes: Mapping[str, Change]
    durable: bool = True
    """False: it may reach git a moment later (healthy records, batched)."""
    level: Literal["info", "warning"] = "info"
    message: str = ""
    """The log message ("" for none), with ``sha`` and ``fields``."""
    fields: Mapping[str, str | int] = field(default_factory=dict)
    event: str = ""
    """The observers' event kind ("" for none), with ``text``, ``sha`` and ``pr``."""
    text: str = ""
    sha: str = ""
    pr: int | None = None


def ledger_changes(
    action: LedgerAction | RevertOpened, *, branches: Sequence[str], now: datetime
) -> LedgerChanges:
    """What ``action`` writes; ``branches`` are the strategy's environments in order."""
    if isinstance(action, RevertOpened):
        return _revert(action, branches, now)
    branch = branches[action.environment]
    match action:
        case RecordHealthy():
            healthy = HealthyRecord(
                dry_sha=action.dry_sha, hydrated_sha=action.hydrated_sha, healthy_since=action.since
            )
            return LedgerChanges(
                branch,
                {branch: lambda led: led.with_healthy(healthy)},
                durable=False,
                message="environment healthy",
                event="healthy",
                text="healthy",
                sha=action.dry_sha,
            )
        case ReleaseHold():
            released = action.dry_sha
            return LedgerChanges(
                branch,
                {branch: lambda led: led.without_holds(released)},
                message="hold released",
                event="released",
                text=action.reason,
                sha=released,
            )
        case HoldDryCommit():
            hold = Hold(
                dry_sha=action.dry_sha, reason=action.reason, since=action.since, source="manual"
            )
            return LedgerChanges(
                branch,
                {branch: lambda led: led.with_hold(hold)},
                level="warning",
                message="hold set",
                event="held",
                text=action.reason,
                sha=action.dry_sha,
            )
        case ResumeEnvironment():
            at = action.at
            return LedgerChanges(
                branch,
                {branch: lambda led: led.model_copy(update={"paused": None, "released_at": at})},
                message="environment resumed",
            )
        case PinEnvironment():
            return _pin(action, branch)
        case ApproveChange():
            approved = action.dry_sha
            return LedgerChanges(
                branch,
                {branch: lambda led: led.with_approved_change(approved)},
                level="warning",
                message="blocked change approved",
                sha=approved,
            )
        case Announce():
            note = Announcement(dry_sha=action.dry_sha, at=action.at)
            return LedgerChanges(
                branch,
                {branch: lambda led: led.with_announcement(note)},
                message="change announced",
                event="announced",
                text="upcoming change",
                sha=action.dry_sha,
            )
        case PauseEnvironment():
            reason = action.reason
            return LedgerChanges(
                branch,
                {branch: lambda led: led.model_copy(update={"paused": reason})},
                level="warning",
                message="environment paused",
                event="paused",
                text=reason,
            )
        case RecordOverride():
            override = Override(dry_sha=action.dry_sha, reason=action.reason, at=action.at)
            return LedgerChanges(
                branch, {branch: lambda led: led.with_override(override)}, sha=action.dry_sha
            )
        case _:
            assert_never(action)


def _pin(action: PinEnvironment, branch: str) -> LedgerChanges:
    """A pin on a dry commit, or (no dry commit) the pin lifted."""
    pin = (
        Pin(dry_sha=action.dry_sha, reason=action.reason, since=action.since)
        if action.dry_sha is not None and action.since is not None
        else None
    )
    return LedgerChanges(
        branch,
        {branch: lambda led: led.model_copy(update={"pin": pin})},
        level="warning",
        message="pin set" if pin else "pin lifted",
        event="pinned" if pin else "unpinned",
        text=action.reason,
        sha=action.dry_sha or "",
    )


def _revert(opened: RevertOpened, branches: Sequence[str], now: datetime) -> LedgerChanges:
    """Rule 8: the revert in its environment, and the bad dry SHA held there and later."""
    action, index = opened.action, opened.action.environment
    revert = Revert(
        bad_dry_sha=action.bad_dry_sha,
        bad_hydrated_sha=action.bad_hydrated_sha,
        restored_dry_sha=action.restore.dry_sha,
        restored_hydrated_sha=action.restore.hydrated_sha,
        reason=action.reason,
        trigger=action.trigger,
        opened_at=now,
        branch=opened.branch,
        revert_sha=opened.commit,
        pr=opened.number,
        auto_merge=action.auto_merge,
    )
    hold = Hold(
        dry_sha=action.bad_dry_sha,
        reason=f"reverted out of {branches[index]}: {action.reason}",
        since=now,
        source="revert",
    )
    holders = action.hold_in or tuple(range(index, len(branches)))
    changes: dict[str, Change] = {
        branches[p]: lambda led: led.with_hold(hold) for p in holders if p != index
    }
    changes[branches[index]] = lambda led: led.with_revert(revert).with_hold(hold)
    return LedgerChanges(
        branches[index],
        changes,
        level="warning",
        message="revert opened",
        fields={"pr": opened.number, "restore": action.restore.dry_sha, "reason": action.reason},
        event="revert",
        text=action.reason,
        sha=action.bad_dry_sha,
        pr=opened.number,
    )
