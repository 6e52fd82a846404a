"""Parsing of schedule expressions (cron, RRULE), shared by the config check and the engine."""

from __future__ import annotations

import functools
from datetime import datetime

from croniter import croniter
from dateutil.rrule import rrule, rrulestr

ANCHOR = datetime(2020, 1, 6)
"""The DTSTART of every RRULE (a Monday, local wall time): rules repeat from here."""


@functools.lru_cache(maxsize=256)
def parse_rrule(text: str) -> rrule:
    """An RRULE (with or without the ``RRULE:`` prefix) starting at ``ANCHOR``."""
    body = text.removeprefix("RRULE:").strip()
    if "DTSTART" in body.upper():
        raise ValueError("leave DTSTART out: windows repeat from the rule alone")
    parsed = rrulestr(body, dtstart=ANCHOR, cache=True)
    if not isinstance(parsed, rrule):
        raise ValueError("one RRULE, not a set")
    return parsed


def validate_schedule(*, cron: str | None, rrule: str | None) -> None:
    """``ValueError`` with a plain message for an expression that cannot be used."""
    if cron is not None and (len(cron.split()) != 5 or not croniter.is_valid(cron)):
        raise ValueError(f"not a five-field cron expression: {cron!r}")
    if rrule is not None:
        try:
            parse_rrule(rrule)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not an RRULE: {exc}") from exc
