"""The user's time zone and calendar day: one place for "local time as the user lives it".

The setting `timezone` names an IANA zone (e.g. `Europe/Berlin`); unset means the machine's
zone. Everything that turns a moment into a calendar day (the message log, the journal) or a
local wall-clock time into a moment (reminders) goes through here, so a message at 00:30 local
belongs to that local date whatever UTC says.

Dates and moments from outside (request bodies, import files) are read here too: a date only in
its canonical form `YYYY-MM-DD` (Python 3.11's `date.fromisoformat` also takes `20200107` and
`2020-W02-3`, which would be stored as a second spelling of a day), a moment only from 1970 to
the end of year 9998 UTC (`LAST_MOMENT`: every zone can show each such value as a date and a
local time, and name the day after it).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FIRST_MOMENT = 0.0  # 1970-01-01T00:00:00Z
# The last moment a time from outside may name (request bodies, imports; `read_moment` and
# the export documents' `Moment`). Not the end of 9999: the last hours of 9999 UTC are past
# the end of the calendar (datetime's year 9999) in a zone east of UTC — 9999-12-31T23:00Z is
# year 10000 in Tokyo —, and a stored one made every later view of its day fail (the
# Markdown exports answered 500). A year earlier every zone (offsets stay within a day) shows
# it, and the day after it too (`day_end`).
LAST_MOMENT = 253370764799.0  # 9998-12-31T23:59:59Z
# The first moment `local_moment` shows as it is (a day into datetime's year 1, for the same
# reason). Older moments come from no input (`FIRST_MOMENT`); journal days before 1970 do.
_FIRST_SHOWN = -62135510400.0  # 0001-01-02T00:00:00Z
_CANONICAL_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


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
    """An aware datetime for epoch seconds `ts` in `zone` (None: the machine's zone).

    A moment beyond what every zone can show — after `LAST_MOMENT` or before year 1, which no
    input takes now, but one stored before that bound (or by hand) may be — is shown as the
    nearest one inside: a wrong hour in a view is better than a view (an export) that fails
    for good on one stored value."""
    if not ts <= LAST_MOMENT:  # NaN too
        ts = LAST_MOMENT
    moment = dt.datetime.fromtimestamp(max(ts, _FIRST_SHOWN), tz=dt.UTC)
    return moment.astimezone(zone) if zone is not None else moment.astimezone()


def calendar_date(ts: float, zone: dt.tzinfo | None = None) -> str:
    """The user's calendar day of a moment (YYYY-MM-DD)."""
    return local_moment(ts, zone).date().isoformat()


def day_end(ts: float, zone: dt.tzinfo | None = None) -> float:
    """Epoch seconds of the midnight that ends the user's calendar day of `ts` (the next
    local 00:00 in `zone`; a day of a clock change is 23 or 25 hours long)."""
    day = local_moment(ts, zone).date() + dt.timedelta(days=1)
    midnight = dt.datetime.combine(day, dt.time(0))
    return attach_zone(midnight, zone).timestamp()


def attach_zone(naive: dt.datetime, zone: dt.tzinfo | None) -> dt.datetime:
    """Read a naive wall-clock time as the user's local time."""
    if zone is None:
        return naive.astimezone()
    return naive.replace(tzinfo=zone)


def read_date(raw: object) -> str:
    """`raw` if it is a calendar date that exists, written `YYYY-MM-DD`; ValueError otherwise
    (any other spelling of a day too: one day has one key)."""
    if isinstance(raw, str) and _CANONICAL_DATE.fullmatch(raw):
        try:
            return dt.date.fromisoformat(raw).isoformat()
        except ValueError:
            pass
    raise ValueError(f"{str(raw)[:40]!r} is not a date (YYYY-MM-DD)")


def read_moment(raw: str | float) -> float:
    """Epoch seconds of `raw` — an ISO 8601 time with an offset (`Z` too) or epoch seconds —
    from 1970 to `LAST_MOMENT` (the end of 9998 UTC); ValueError otherwise."""
    if isinstance(raw, str):
        try:
            moment = dt.datetime.fromisoformat(raw.strip().replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is None or moment.tzinfo is None:
            raise ValueError(f"{raw[:40]!r} is not an ISO 8601 time with offset")
        seconds = moment.timestamp()
    elif isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
        raise ValueError(f"{str(raw)[:40]!r} is not a time")
    else:
        seconds = float(raw)
    if not FIRST_MOMENT <= seconds <= LAST_MOMENT:
        raise ValueError(f"{str(raw)[:40]!r} is not a time from 1970 to the end of 9998 (UTC)")
    return seconds
