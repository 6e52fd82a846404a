"""Freeze dates and ranges written in the configuration: holidays, release weeks.

A freeze stops every promotion it covers (reverts still go through) from its start to its
end, both read as wall-clock times in ``timeZone``. ``dates`` freeze whole days (midnight
to midnight); ``from``/``until`` freeze a range. A strategy's ``freezes`` cover its
environments (or those of ``environments``); the top level's cover every strategy (or
those of ``strategies``). A person freezes and unfreezes by hand with ``promoter freeze``
(docs/freezes.md).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator, model_validator

from promoter.config.base import Spec

Interval = tuple[datetime, datetime]
"""A start and an end, both aware (UTC)."""


class FreezeWindow(Spec):
    """One freeze: whole ``dates``, or the range ``from`` to ``until``, in ``timeZone``."""

    reason: str = Field(min_length=1, max_length=200, description="Shown on the PR and in the API.")
    time_zone: str = Field(default="UTC", description="IANA time zone, e.g. Europe/Berlin.")
    dates: list[date] = Field(
        default_factory=list,
        description="Whole days frozen, e.g. 2026-12-24 (midnight to midnight).",
    )
    from_: datetime | None = Field(
        default=None, alias="from", description="Start of a range, e.g. 2026-11-16T00:00."
    )
    until: datetime | None = Field(default=None, description="End of a range (not included).")
    environments: list[str] = Field(
        default_factory=list, description="Environment branches it covers; default: every one."
    )

    @field_validator("time_zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value

    @model_validator(mode="after")
    def _dates_or_range(self) -> FreezeWindow:
        ranged = self.from_ is not None or self.until is not None
        if bool(self.dates) == ranged:
            raise ValueError("give either dates, or from and until")
        if ranged:
            if self.from_ is None or self.until is None:
                raise ValueError("a range needs both from and until")
            if self._aware(self.until) <= self._aware(self.from_):
                raise ValueError("until must come after from")
        return self

    def _aware(self, when: datetime) -> datetime:
        """``when`` as written: a naive time is a wall-clock time in ``time_zone``."""
        if when.tzinfo is None:
            when = when.replace(tzinfo=ZoneInfo(self.time_zone))
        return when.astimezone(UTC)

    def intervals(self) -> list[Interval]:
        """The frozen spans in UTC, consecutive dates joined into one span."""
        if self.from_ is not None and self.until is not None:
            return [(self._aware(self.from_), self._aware(self.until))]
        zone = ZoneInfo(self.time_zone)
        spans: list[Interval] = []
        for day in sorted(set(self.dates)):
            start = datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)
            end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone).astimezone(UTC)
            if spans and spans[-1][1] >= start:
                spans[-1] = (spans[-1][0], max(spans[-1][1], end))
            else:
                spans.append((start, end))
        return spans

    def covers(self, branch: str) -> bool:
        return not self.environments or branch in self.environments


class GlobalFreezeWindow(FreezeWindow):
    """A freeze of the whole configuration: every strategy, or those of ``strategies``."""

    strategies: list[str] = Field(
        default_factory=list, description="Strategies it covers; default: every one."
    )
