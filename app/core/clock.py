"""The user's time zone and calendar day: one place for "local time as the user lives it".

The setting `timezone` names an IANA zone (e.g. `Europe/Berlin`); unset means the machine's
zone. Everything that turns a moment into a calendar day (the message log, the journal) or a
local wall-clock time into a moment (reminders) goes through here, so a message at 00:30 local
belongs to that local date whatever UTC says.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class UnknownZone(ValueError):
    """The name is not an IANA time zone known to this machine."""


def zone_named(name: str | None) -> dt.tzinfo | None:
    """The zone for `name`; None (the machine's zone) when the name is empty."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnknownZone(f"unknown time zone {name!r}") from None


def local_moment(ts: float, zone: dt.tzinfo | None) -> dt.datetime:
    """An aware datetime for epoch seconds `ts` in `zone` (None: the machine's zone)."""
    moment = dt.datetime.fromtimestamp(ts, tz=dt.timezone.utc)
    return moment.astimezone(zone) if zone is not None else moment.astimezone()


def calendar_date(ts: float, zone: dt.tzinfo | None = None) -> str:
    """The user's calendar day of a moment (YYYY-MM-DD)."""
    return local_moment(ts, zone).date().isoformat()


def attach_zone(naive: dt.datetime, zone: dt.tzinfo | None) -> dt.datetime:
    """Read a naive wall-clock time as the user's local time."""
    if zone is None:
        return naive.astimezone()
    return naive.replace(tzinfo=zone)
