"""Schedule windows against a brute-force oracle, across DST changes in many zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from promoter.config.gates import Window, Windows
from promoter.engine.gates.windows import window_state

ZONES = [
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "America/Sao_Paulo",
    "Australia/Lord_Howe",  # a half-hour DST shift
    "Asia/Kolkata",
    "Pacific/Chatham",
]

instants = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
).map(lambda t: t.replace(second=0, microsecond=0))


@st.composite
def crons(draw: st.DrawFn) -> str:
    minute = draw(st.sampled_from(["0", "15", "30", "*/20", "5"]))
    hour = draw(st.sampled_from(["*", "1", "2", "3", "9", "1-3", "*/2"]))
    dow = draw(st.sampled_from(["*", "1-5", "0", "6"]))
    return f"{minute} {hour} * * {dow}"


def oracle_open(cron: str, minutes: int, zone: ZoneInfo, now: datetime) -> bool:
    """Open when some wall-clock minute matching ``cron`` (taken as the first instant it
    names) starts a window that holds ``now``: every candidate minute, checked one by one."""
    local_now = now.astimezone(zone).replace(tzinfo=None)
    start = local_now - timedelta(minutes=minutes) - timedelta(hours=3)
    wall = start.replace(second=0, microsecond=0)
    while wall <= local_now + timedelta(hours=3):
        if croniter.match(cron, wall):
            begins = wall.replace(tzinfo=zone, fold=0)
            if begins <= now < begins + timedelta(minutes=minutes):
                return True
        wall += timedelta(minutes=1)
    return False


# A bound on a stuck run: traced by mutmut's first pass (which records what each test
# calls), its 60 examples take longer than the 10 s `make mutate` gives a test.
@pytest.mark.timeout(120)
@settings(max_examples=60, deadline=None)
@given(
    cron=crons(),
    minutes=st.integers(min_value=1, max_value=180),
    zone=st.sampled_from(ZONES),
    now=instants,
)
def test_a_cron_window_is_open_exactly_when_the_oracle_says(
    cron: str, minutes: int, zone: str, now: datetime
) -> None:
    config = Windows(time_zone=zone, allow=[Window(cron=cron, duration=minutes * 60)])
    assert window_state(config, now).open == oracle_open(cron, minutes, ZoneInfo(zone), now)


@settings(max_examples=40, deadline=None)
@given(
    cron=crons(),
    minutes=st.integers(min_value=1, max_value=180),
    zone=st.sampled_from(ZONES),
    now=instants,
)
def test_nothing_changes_before_the_announced_instant(
    cron: str, minutes: int, zone: str, now: datetime
) -> None:
    config = Windows(time_zone=zone, allow=[Window(cron=cron, duration=minutes * 60)])
    state = window_state(config, now)
    assert state.changes_at is not None and state.changes_at > now
    for probe in (now + (state.changes_at - now) / 2, state.changes_at - timedelta(seconds=1)):
        if probe > now:
            assert window_state(config, probe).open == state.open


@st.composite
def denied(draw: st.DrawFn) -> tuple[str, int, str, datetime]:
    """A deny window (cron, minutes, zone) and an instant inside one of its windows."""
    cron, zone = draw(crons()), draw(st.sampled_from(ZONES))
    minutes = draw(st.integers(min_value=1, max_value=240))
    local = draw(instants).astimezone(ZoneInfo(zone)).replace(tzinfo=None)
    begins = croniter(cron, local).get_next(datetime).replace(tzinfo=ZoneInfo(zone), fold=0)
    offset = timedelta(minutes=draw(st.integers(min_value=0, max_value=minutes - 1)))
    return cron, minutes, zone, (begins + offset).astimezone(UTC)


@settings(max_examples=40, deadline=None)
@given(allow=crons(), deny=denied())
def test_deny_wins(allow: str, deny: tuple[str, int, str, datetime]) -> None:
    cron, minutes, zone, now = deny
    assert oracle_open(cron, minutes, ZoneInfo(zone), now)  # the instant is in a deny window
    config = Windows(
        time_zone=zone,
        allow=[Window(cron=allow, duration=minutes * 60)],
        deny=[Window(cron=cron, duration=minutes * 60)],
    )
    assert not window_state(config, now).open


def test_an_empty_allow_list_means_always_unless_denied() -> None:
    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert window_state(Windows(), now).open
    friday = Windows(deny=[Window(cron="0 0 * * 1", duration=24 * 3600)])
    assert not window_state(friday, now).open  # a Monday


def test_an_rrule_window_opens_on_its_weekday_in_its_zone() -> None:
    tuesday_ten = Window(rrule="FREQ=WEEKLY;BYDAY=TU;BYHOUR=10;BYMINUTE=0", duration=3600)
    config = Windows(time_zone="America/New_York", allow=[tuesday_ten])
    before = window_state(config, datetime(2026, 11, 24, 14, 59, tzinfo=UTC))
    assert not before.open
    assert before.changes_at == datetime(2026, 11, 24, 15, 0, tzinfo=UTC)
    assert window_state(config, datetime(2026, 11, 24, 15, 30, tzinfo=UTC)).open
    assert not window_state(config, datetime(2026, 11, 24, 16, 0, tzinfo=UTC)).open


def test_a_window_starting_in_the_hour_a_dst_change_skips_opens_when_the_clock_jumps() -> None:
    # Europe/Berlin skips 02:00-03:00 on 2026-03-29; 02:30 wall time begins at 01:30 UTC.
    config = Windows(time_zone="Europe/Berlin", allow=[Window(cron="30 2 * * *", duration=30 * 60)])
    assert not window_state(config, datetime(2026, 3, 29, 1, 29, tzinfo=UTC)).open
    assert window_state(config, datetime(2026, 3, 29, 1, 30, tzinfo=UTC)).open
    assert not window_state(config, datetime(2026, 3, 29, 2, 0, tzinfo=UTC)).open


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ({"cron": "0 9 * *", "duration": "1h"}, "five-field cron"),
        ({"rrule": "FREQ=SOMETIMES", "duration": "1h"}, "not an RRULE"),
        ({"cron": "0 9 * * *", "rrule": "FREQ=DAILY", "duration": "1h"}, "exactly one"),
        ({"cron": "0 9 * * *", "duration": 0}, "positive duration"),
    ],
)
def test_a_bad_window_is_refused_with_a_plain_message(
    window: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        Window.model_validate(window)


def test_an_unknown_time_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown IANA time zone"):
        Windows(time_zone="Mars/Olympus_Mons")


def test_two_gates_that_would_share_a_check_are_refused() -> None:
    from promoter.config import Environment

    with pytest.raises(ValueError, match="two gates show as promoter/window"):
        Environment.model_validate(
            {"branch": "environment/prod", "gates": [{"window": {}}, {"window": {}}]}
        )
    named = Environment.model_validate(
        {"branch": "environment/prod", "gates": [{"window": {}}, {"name": "freeze", "window": {}}]}
    )
    assert [g.key for g in named.gates] == ["promoter/window", "promoter/freeze"]
