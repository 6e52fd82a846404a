"""The freeze gate: a stop-the-line switch (a person's ``promoter freeze``) or a freeze date
of the configuration covering the environment blocks its promotions until it ends or is
lifted. Reverts are judged apart (``engine.revert``) and go through.

Pure: the freezes in force are in the snapshot (``EnvironmentSnapshot.freezes``), and
whether a dated one covers ``snapshot.now`` is decided here.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from promoter.engine.core.actions import GateVerdict
from promoter.engine.core.snapshot import FreezePeriod, Snapshot
from promoter.models import Phase

FREEZE_KEY = "promoter/freeze"
"""The check a freeze shows as on the PR: pending while frozen, green once lifted."""


def in_force(period: FreezePeriod, now: datetime) -> bool:
    """Whether ``period`` freezes at ``now`` (a manual freeze has no end)."""
    started = period.start is None or period.start <= now
    return started and (period.end is None or now < period.end)


def said(period: FreezePeriod) -> str:
    """``frozen until Sun 2026-12-27 00:00 Europe/Berlin: Christmas (strategy guestbook)``,
    or ``frozen by ada since 2026-11-25 10:02 UTC, until lifted: incident 42 (everything)``."""
    if period.end is not None:
        local = period.end.astimezone(ZoneInfo(period.time_zone))
        when = f"until {local:%a %Y-%m-%d %H:%M} {period.time_zone}"
    else:
        since = f" since {period.start:%Y-%m-%d %H:%M} UTC" if period.start else ""
        when = f"by {period.by}{since}, until lifted" if period.by else "until lifted"
    return f"frozen {when}: {period.reason} ({period.scope})"


def frozen(snapshot: Snapshot, index: int) -> GateVerdict | None:
    """Pending while a freeze covers the environment, saying when it ends; None otherwise."""
    env = snapshot.environments[index]
    now = snapshot.now
    current = [p for p in env.freezes if in_force(p, now)]
    if not current:
        return None
    ends = [p.end for p in current]
    lasting = any(end is None for end in ends)
    changes_at = None if lasting else max(end for end in ends if end is not None)
    reason = "; ".join(said(p) for p in current)
    return GateVerdict(name=FREEZE_KEY, phase=Phase.PENDING, reason=reason, changes_at=changes_at)
