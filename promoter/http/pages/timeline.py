"""An environment's history for the dashboard: promotions, reverts, holds, overrides.

Read from the ledger the promoter keeps in git, newest first, each with how long it
lasted (until the next commit ran healthy, the revert was restored, or now).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from promoter.engine import EnvLedger


@dataclass(frozen=True)
class Entry:
    at: datetime
    kind: str
    """healthy | revert | hold | pin | override"""
    dry_sha: str
    text: str
    seconds: float | None


def timeline(
    ledger: EnvLedger,
    *,
    now: datetime,
    running: str | None = None,
    moved_at: datetime | None = None,
) -> list[Entry]:
    """Every entry of ``ledger`` with its duration, newest first. ``running`` is the dry
    commit the environment runs now and ``moved_at`` when it started to: a commit that
    ran healthy before and is not running any more lasted until then, not until now."""
    entries = [
        *_ran_healthy(ledger, now, running, moved_at),
        *_reverts(ledger),
        *_holds_and_overrides(ledger, now),
    ]
    return sorted(entries, key=lambda e: e.at, reverse=True)


def _ran_healthy(
    ledger: EnvLedger, now: datetime, running: str | None, moved_at: datetime | None
) -> list[Entry]:
    """Each healthy record (oldest first), lasting until another commit ran healthy or a
    revert (not of this commit) was opened, or the environment moved on to another
    commit; else (it still runs) until now."""
    entries: list[Entry] = []
    healthy = sorted(ledger.healthy, key=lambda h: h.healthy_since)
    for index, record in enumerate(healthy):
        ends = [h.healthy_since for h in healthy[index + 1 :] if h.dry_sha != record.dry_sha]
        ends += [
            r.opened_at
            for r in ledger.reverts
            if r.opened_at > record.healthy_since and r.bad_dry_sha != record.dry_sha
        ]
        gone = running is not None and running != record.dry_sha
        if gone and moved_at is not None and moved_at > record.healthy_since:
            ends.append(moved_at)
        until = min(ends) if ends else now
        still = not ends and not gone
        entries.append(
            Entry(
                record.healthy_since,
                "healthy",
                record.dry_sha,
                "runs healthy" if still else "ran healthy",
                (until - record.healthy_since).total_seconds(),
            )
        )
    return entries


def _reverts(ledger: EnvLedger) -> list[Entry]:
    """Each revert, lasting until a commit ran healthy after it (unknown until then)."""
    entries: list[Entry] = []
    for revert in ledger.reverts:
        restored = [h.healthy_since for h in ledger.healthy if h.healthy_since >= revert.opened_at]
        entries.append(
            Entry(
                revert.opened_at,
                "revert",
                revert.bad_dry_sha,
                f"{revert.trigger} revert (PR #{revert.pr}) to {revert.restored_dry_sha[:8]}: "
                f"{revert.reason}",
                (min(restored) - revert.opened_at).total_seconds() if restored else None,
            )
        )
    return entries


def _holds_and_overrides(ledger: EnvLedger, now: datetime) -> list[Entry]:
    """The holds and the pin, lasting until now, then the overrides (no duration)."""
    entries: list[Entry] = []
    for hold in ledger.holds:
        entries.append(
            Entry(
                hold.since,
                "hold",
                hold.dry_sha,
                f"held ({hold.source}): {hold.reason}",
                (now - hold.since).total_seconds(),
            )
        )
    if ledger.pin is not None:
        pin = ledger.pin
        entries.append(
            Entry(
                pin.since,
                "pin",
                pin.dry_sha,
                f"pinned: {pin.reason}",
                (now - pin.since).total_seconds(),
            )
        )
    for override in ledger.overrides:
        entries.append(
            Entry(
                override.at,
                "override",
                override.dry_sha,
                f"promoted past the gates: {override.reason}",
                None,
            )
        )
    return entries


def duration(seconds: float | None) -> str:
    """``3d 4h``, ``5h 2m``, ``4m 10s``, ``12s``; an em dash when unknown."""
    if seconds is None:
        return "—"
    s = int(max(0, seconds))
    days, rest = divmod(s, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"
