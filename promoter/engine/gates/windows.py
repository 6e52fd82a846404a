"""Schedule windows: whether promotion is open at an instant, and when that next changes.

Window starts are wall-clock times in the window's zone. A start that falls in a hour
skipped by a DST change begins when the clock jumps past it; one in a repeated hour
begins the first time. A window lasts its duration in real time from its start.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from promoter.config.gates import Window, Windows
from promoter.config.schedules import parse_rrule

SLACK = timedelta(hours=3)
"""Wall-clock time and instants disagree by less than this around a DST change."""
MAX_STEPS = 20_000
"""A bound on the starts examined for one answer (a minutely cron over two weeks)."""


def _local_starts(window: Window, local: datetime, *, forward: bool) -> Iterator[datetime]:
    """Naive wall-clock starts of ``window`` before (or after) the naive ``local``."""
    if window.cron is not None:
        it = croniter(window.cron, local)
        step = it.get_next if forward else it.get_prev
        while True:
            yield step(datetime)
    else:
        assert window.rrule is not None
        rule = parse_rrule(window.rrule)
        # Step strictly past the last start (dateutil's ``inc=False`` can repeat it).
        tick = timedelta(microseconds=1)
        when: datetime | None = local
        while when is not None:
            when = rule.after(when, inc=True) if forward else rule.before(when, inc=True)
            if when is not None:
                yield when
                when = when + tick if forward else when - tick


def _aware(local: datetime, zone: ZoneInfo) -> datetime:
    """The instant a wall-clock time names (the first, when it names two), in UTC: aware
    arithmetic in a zone is wall-clock arithmetic, which DST changes make wrong."""
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


def _open_span(window: Window, now: datetime, zone: ZoneInfo) -> tuple[datetime, datetime] | None:
    """The start and end of the latest occurrence of ``window`` that contains ``now``."""
    local_now = now.astimezone(zone).replace(tzinfo=None)
    length = timedelta(seconds=window.duration)
    latest: tuple[datetime, datetime] | None = None  # (local start, instant start)
    starts = _local_starts(window, local_now + SLACK, forward=False)
    for count, start_local in enumerate(starts):
        start = _aware(start_local, zone)
        if start <= now and (latest is None or start > latest[1]):
            latest = (start_local, start)
        if latest is not None and start_local < min(latest[0], local_now) - SLACK:
            break
        if count > MAX_STEPS:
            break
    if latest is None or now >= latest[1] + length:
        return None
    return latest[1], latest[1] + length


def _next_start(window: Window, now: datetime, zone: ZoneInfo) -> datetime | None:
    """The first start of ``window`` after ``now``."""
    local_now = now.astimezone(zone).replace(tzinfo=None)
    first: tuple[datetime, datetime] | None = None
    starts = _local_starts(window, local_now - SLACK, forward=True)
    for count, start_local in enumerate(starts):
        start = _aware(start_local, zone)
        if start > now and (first is None or start < first[1]):
            first = (start_local, start)
        if first is not None and start_local > first[0] + SLACK:
            break
        if count > MAX_STEPS:
            break
    return None if first is None else first[1]


@dataclass(frozen=True)
class WindowState:
    """Whether promotion is open now, and the next instant that may change it."""

    open: bool
    changes_at: datetime | None


def in_any(windows: list[Window], now: datetime, zone: ZoneInfo) -> datetime | None:
    """The latest end among the windows open at ``now``, or None when none is open."""
    ends = [span[1] for w in windows if (span := _open_span(w, now, zone)) is not None]
    return max(ends) if ends else None


def window_state(config: Windows, now: datetime) -> WindowState:
    """Open when in an allow window (or there are none) and in no deny window."""
    zone = ZoneInfo(config.time_zone)
    allowed_until = in_any(config.allow, now, zone) if config.allow else None
    denied_until = in_any(config.deny, now, zone)
    allowed = not config.allow or allowed_until is not None
    is_open = allowed and denied_until is None
    edges = [
        t
        for t in (
            allowed_until,
            denied_until,
            *(_next_start(w, now, zone) for w in (*config.allow, *config.deny)),
        )
        if t is not None and t > now
    ]
    return WindowState(open=is_open, changes_at=min(edges) if edges else None)


def describe(when: datetime, zone_name: str) -> str:
    """``Mon 09:00 Europe/Berlin``."""
    local = when.astimezone(ZoneInfo(zone_name))
    return f"{local:%a %H:%M} {zone_name}"
