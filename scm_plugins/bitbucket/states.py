"""Build states of both Bitbucket products as the promoter's phases, and back.

Read: ``SUCCESSFUL`` passes; ``FAILED``, ``STOPPED`` (Cloud: a person stopped the build)
and ``CANCELLED`` (Data Center) fail; ``INPROGRESS`` and ``UNKNOWN`` (Data Center) wait,
and so does any state Bitbucket adds later until someone maps it. Written: the promoter's
checks are ``INPROGRESS``, ``SUCCESSFUL`` or ``FAILED``, which both products take.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from promoter.models import Phase

PHASES = {
    "SUCCESSFUL": Phase.SUCCESS,
    "FAILED": Phase.FAILURE,
    "STOPPED": Phase.FAILURE,
    "CANCELLED": Phase.FAILURE,
    "INPROGRESS": Phase.PENDING,
    "UNKNOWN": Phase.PENDING,
}
STATES = {Phase.PENDING: "INPROGRESS", Phase.SUCCESS: "SUCCESSFUL", Phase.FAILURE: "FAILED"}
MAX_DESCRIPTION = 255
MAX_NAME = 255


def phase_of(state: Any) -> Phase:
    return PHASES.get(str(state or "").upper(), Phase.PENDING)


def iso_time(value: Any) -> datetime | None:
    """An ISO 8601 time (Cloud), or None."""
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def epoch_ms(value: Any) -> datetime | None:
    """Milliseconds since the epoch (Data Center), or None."""
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return datetime.fromtimestamp(value / 1000.0, UTC)
    return None


def same_commit(given: str, full: str) -> bool:
    """Whether ``given`` (Cloud's 12-character hash, or a full one) names commit ``full``."""
    given, full = given.strip().lower(), full.strip().lower()
    return len(given) >= 7 and full.startswith(given)
