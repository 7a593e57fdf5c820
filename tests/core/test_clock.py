"""The user's calendar day and local time (app/core/clock.py) and the `timezone` setting."""

from __future__ import annotations

import datetime as dt
import math
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from app.core.clock import (
    FIRST_MOMENT,
    LAST_MOMENT,
    UnknownZone,
    attach_zone,
    calendar_date,
    day_end,
    local_moment,
    read_moment,
    zone_named,
)
from app.core.settings import SettingsError, defaults

BERLIN = "Europe/Berlin"


def test_half_past_midnight_local_belongs_to_the_local_day() -> None:
    # 2026-07-14 22:30 UTC is 00:30 on the 15th in Berlin (summer time, UTC+2).
    ts = dt.datetime(2026, 7, 14, 22, 30, tzinfo=dt.timezone.utc).timestamp()
    assert calendar_date(ts, zone_named(BERLIN)) == "2026-07-15"
    assert calendar_date(ts, zone_named("UTC")) == "2026-07-14"


def test_day_boundary_follows_daylight_saving_time() -> None:
    zone = zone_named(BERLIN)
    # Winter (UTC+1): 23:30 UTC is already the next day; summer (UTC+2): 22:30 UTC is.
    winter = dt.datetime(2026, 1, 10, 23, 30, tzinfo=dt.timezone.utc).timestamp()
    summer_before = dt.datetime(2026, 7, 10, 21, 59, tzinfo=dt.timezone.utc).timestamp()
    summer_after = dt.datetime(2026, 7, 10, 22, 0, tzinfo=dt.timezone.utc).timestamp()
    assert calendar_date(winter, zone) == "2026-01-11"
    assert calendar_date(summer_before, zone) == "2026-07-10"
    assert calendar_date(summer_after, zone) == "2026-07-11"


def test_naive_wall_clock_time_is_read_in_the_users_zone() -> None:
    moment = attach_zone(dt.datetime(2026, 3, 1, 9, 0), zone_named(BERLIN))
    assert moment.utcoffset() == dt.timedelta(hours=1)
    assert attach_zone(dt.datetime(2026, 3, 1, 9, 0), None).tzinfo is not None


def test_unknown_zone_is_refused() -> None:
    with pytest.raises(UnknownZone):
        zone_named("Mars/Olympus_Mons")
    assert zone_named(None) is None and zone_named("") is None


def test_timezone_setting_is_validated() -> None:
    assert defaults(timezone=BERLIN).timezone == BERLIN
    with pytest.raises(SettingsError, match="timezone"):
        defaults(timezone="Nowhere/Land")


# --- the end of the user's day (issue 21: what the offline model said today) ---------------

DAY_ZONES = ["Pacific/Kiritimati", "Etc/GMT+12", "Europe/Berlin", "America/St_Johns",
             "Asia/Kathmandu", "Australia/Lord_Howe", "UTC"]


@hypothesis_settings(max_examples=300, deadline=None)
@given(ts=st.floats(min_value=0, max_value=4_000_000_000), zone=st.sampled_from(DAY_ZONES))
def test_the_day_ends_at_the_next_local_midnight(ts, zone):
    """Every moment of a day lies before its end, the end is the next day's first moment in
    the user's zone, and it is local midnight (also on a day of a clock change)."""
    tz = ZoneInfo(zone)
    end = day_end(ts, tz)
    assert ts < end <= ts + 25 * 3600
    assert calendar_date(end - 0.001, tz) == calendar_date(ts, tz)
    assert calendar_date(end, tz) != calendar_date(ts, tz)
    assert local_moment(end, tz).time() == dt.time(0)


# --- moments every zone shows (issue 38 item 11) -------------------------------------------


def test_the_first_and_last_moment_taken_have_a_day_and_its_end_in_every_zone():
    """9999-12-31T23:00Z was taken and is year 10000 in Tokyo: its day could not be named."""
    assert read_moment("9998-12-31T23:59:59Z") == LAST_MOMENT
    with pytest.raises(ValueError, match="end of 9998"):
        read_moment("9999-12-31T23:00:00Z")
    for name in sorted(available_timezones()):
        zone = ZoneInfo(name)
        for ts in (FIRST_MOMENT, LAST_MOMENT):
            assert day_end(ts, zone) > ts, name
            assert calendar_date(ts, zone) <= "9999-01-01", name


@pytest.mark.parametrize("stored", [253402297200.0, 1e20, math.inf, math.nan])
def test_a_stored_moment_past_the_last_one_is_shown_as_the_last(stored):
    for zone in (ZoneInfo("Asia/Tokyo"), ZoneInfo("Pacific/Kiritimati"), ZoneInfo("UTC"), None):
        assert local_moment(stored, zone) == local_moment(LAST_MOMENT, zone)


@pytest.mark.parametrize("stored", [-1e20, -math.inf])
def test_a_stored_moment_before_year_one_is_shown_on_its_second_day(stored):
    shown = local_moment(stored, ZoneInfo("Etc/GMT+12"))
    assert shown == dt.datetime(1, 1, 2, tzinfo=dt.UTC)
    assert calendar_date(-1e20, ZoneInfo("Etc/GMT+12")) == "0001-01-01"
