"""Freeze dates and ranges in promoter.yaml: time zones, joined days, and what is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from promoter.config.freezes import FreezeWindow
from promoter.config.loader import parse_config

BASE = """
scmProviders: [{name: local, local: {}}]
repositories: [{name: gitops, url: /tmp/x, scmProvider: local}]
promotionStrategies:
  - name: guestbook
    repository: gitops
    environments: [{branch: environment/dev}]
    freezes:
      - {reason: Christmas, timeZone: Europe/Berlin, dates: [2026-12-24, 2026-12-25, 2026-12-31]}
freezes:
  - reason: Release week
    timeZone: America/New_York
    from: 2026-11-16T00:00
    until: 2026-11-21T00:00
    strategies: [guestbook]
"""


def test_consecutive_freeze_dates_join_into_one_span_in_their_time_zone() -> None:
    config = parse_config(BASE)
    window = config.promotion_strategies[0].freezes[0]
    assert window.intervals() == [
        (datetime(2026, 12, 23, 23, tzinfo=UTC), datetime(2026, 12, 25, 23, tzinfo=UTC)),
        (datetime(2026, 12, 30, 23, tzinfo=UTC), datetime(2026, 12, 31, 23, tzinfo=UTC)),
    ]


def test_a_range_is_read_as_wall_clock_time_in_its_zone() -> None:
    [window] = parse_config(BASE).freezes
    assert window.intervals() == [
        (datetime(2026, 11, 16, 5, tzinfo=UTC), datetime(2026, 11, 21, 5, tzinfo=UTC))
    ]
    assert window.strategies == ["guestbook"]


@pytest.mark.parametrize(
    "fields",
    [
        {"reason": "x"},
        {"reason": "x", "dates": ["2026-12-24"], "from": "2026-12-01T00:00"},
        {"reason": "x", "from": "2026-12-01T00:00"},
        {"reason": "x", "from": "2026-12-02T00:00", "until": "2026-12-01T00:00"},
        {"reason": "x", "dates": ["2026-12-24"], "timeZone": "Mars/Olympus"},
        {"reason": "", "dates": ["2026-12-24"]},
    ],
)
def test_a_freeze_without_one_clear_span_is_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        FreezeWindow.model_validate(fields)
