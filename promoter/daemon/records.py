"""What each ledger action writes: the change to an environment's ledger, and how it is
told (log level and message, observer event). The executor writes it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from promoter.engine import (
    Announce,
    Announcement,
    ApproveChange,
    EnvLedger,
    HealthyRecord,
    Hold,
    HoldDryCommit,
    Override,
    PauseEnvironment,
    Pin,
    PinEnvironment,
    RecordHealthy,
    RecordOverride,
    ReleaseHold,
    ResumeEnvironment,
)

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
class Record:
    change: Callable[[EnvLedger], EnvLedger]
    durable: bool = True
    """False: it may reach git a moment later (healthy records, batched)."""
    level: int = logging.INFO
    message: str = ""
    event: str = ""
    """The observers' event kind ("" for none), with ``text`` and ``sha``."""
    text: str = ""
    sha: str = ""


def record_of(action: LedgerAction) -> Record:
    """The ledger change ``action`` makes, and how to tell it."""
    match action:
        case RecordHealthy():
            healthy = HealthyRecord(
                dry_sha=action.dry_sha, hydrated_sha=action.hydrated_sha, healthy_since=action.since
            )
            return Record(
                lambda led: led.with_healthy(healthy),
                durable=False,
                message="environment healthy",
                event="healthy",
                text="healthy",
                sha=action.dry_sha,
            )
        case ReleaseHold():
            sha = action.dry_sha
            return Record(
                lambda led: led.without_holds(sha),
                message="hold released",
                event="released",
                text=action.reason,
                sha=sha,
            )
        case HoldDryCommit():
            hold = Hold(
                dry_sha=action.dry_sha, reason=action.reason, since=action.since, source="manual"
            )
            return Record(
                lambda led: led.with_hold(hold),
                level=logging.WARNING,
                message="hold set",
                event="held",
                text=action.reason,
                sha=action.dry_sha,
            )
        case ResumeEnvironment():
            at = action.at
            return Record(
                lambda led: led.model_copy(update={"paused": None, "released_at": at}),
                message="environment resumed",
            )
        case PinEnvironment():
            pin = (
                Pin(dry_sha=action.dry_sha, reason=action.reason, since=action.since)
                if action.dry_sha is not None and action.since is not None
                else None
            )
            return Record(
                lambda led: led.model_copy(update={"pin": pin}),
                level=logging.WARNING,
                message="pin set" if pin else "pin lifted",
                event="pinned" if pin else "unpinned",
                text=action.reason,
                sha=action.dry_sha or "",
            )
        case ApproveChange():
            approved = action.dry_sha
            return Record(
                lambda led: led.with_approved_change(approved),
                level=logging.WARNING,
                message="blocked change approved",
                sha=approved,
            )
        case Announce():
            note = Announcement(dry_sha=action.dry_sha, at=action.at)
            return Record(
                lambda led: led.with_announcement(note),
                message="change announced",
                event="announced",
                text="upcoming change",
                sha=action.dry_sha,
            )
        case PauseEnvironment():
            reason = action.reason
            return Record(
                lambda led: led.model_copy(update={"paused": reason}),
                level=logging.WARNING,
                message="environment paused",
                event="paused",
                text=reason,
            )
        case RecordOverride():
            override = Override(dry_sha=action.dry_sha, reason=action.reason, at=action.at)
            return Record(lambda led: led.with_override(override), sha=action.dry_sha)
        case _:
            assert_never(action)
