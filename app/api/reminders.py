"""A pair's reminders over HTTP (design §9); a due reminder enters as the character's own
impulse (the reminder clock, `app.impulses.clock`).

- `GET/POST /api/characters/{cid}/reminders`: list / create.
- `PATCH /api/characters/{cid}/reminders/{id}` `{"text"?, "due_at"?, "done"?}`: change the
  text or the time (a new time makes the reminder pending again: that is also how one that
  fired is snoozed), or mark it done (`true`: it will not come; `false`: open again).
  The same checks as a new reminder (text, `check_due_at`, the per-pair cap, the rate limit
  for a new time); 409 `reminder_busy` while the reminder is being delivered.
- `DELETE /api/characters/{cid}/reminders/{id}`: remove it → 204.

Only the caller's reminders of that character are found: any other id is 404. Every
refusal writes nothing; the store's compare-and-set keeps a concurrent change by the clock
or by a turn's agent.
"""

from __future__ import annotations

import datetime as dt
import logging
import time

import msgspec
from aiohttp import web

from app.api.access import known_character
from app.api.app_keys import REMINDER_CLOCK, REMINDERS, RUNTIME, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_json
from app.api.wire import answer
from app.core.clock import zone_named
from app.core.log import fields
from app.memory.reminders import (
    DueTimeRefused,
    Reminder,
    check_due_at,
    completed,
    parse_due,
    rescheduled,
)

log = logging.getLogger(__name__)


class ReminderIn(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    due_at: str | float  # ISO 8601 (without an offset: the user's time zone), or epoch seconds


class ReminderPatch(msgspec.Struct, forbid_unknown_fields=True):
    text: str | None = None
    due_at: str | float | None = None
    done: bool | None = None


def due_time(value: str | float, zone: dt.tzinfo | None) -> float:
    """Epoch seconds from the body's `due_at` (the one due-time parser); anything else is
    refused (`DueTimeError`: 400 `invalid_due_at`)."""
    return parse_due(value, zone=zone)


async def list_reminders(request: web.Request) -> web.Response:
    character_id = known_character(request)
    reminders = await request.app[REMINDERS].list(request[USER_ID], character_id)
    zone = zone_named(request.app[SETTINGS].timezone)
    return answer([r.view(zone) for r in reminders])


def checked_text(request: web.Request, raw: str) -> str:
    return bounded_text(
        raw,
        limit=request.app[SETTINGS].max_message_chars,
        noun="reminder text",
        empty_code="empty_text",
        long_code="text_too_long",
        user_id=request[USER_ID],
    )


def checked_due(request: web.Request, raw: str | float, zone: dt.tzinfo | None) -> float:
    """The body's `due_at` as epoch seconds, refused (400 `invalid_due_at`) where a new
    reminder's time would be."""
    due_at = due_time(raw, zone)
    check_due_at(due_at, time.time(), request.app[SETTINGS].reminder_max_days_ahead)
    return due_at


def count_against_rate(request: web.Request) -> None:
    """A reminder with a (new) time becomes a turn when due: it counts like a message."""
    user_id = request[USER_ID]
    runtime = request.app[RUNTIME]
    if not runtime.rate_limiter.allow(user_id):
        log.warning(
            "reminder refused: rate limit",
            extra=fields(
                user_id=user_id, limit=runtime.rate_limiter.rate, setting="rate_limit_per_second"
            ),
        )
        raise ApiError(
            429, "rate_limited", "too many requests per second", headers={"Retry-After": "1"}
        )


def wake_clock(request: web.Request) -> None:
    clock = request.app.get(REMINDER_CLOCK)
    if clock is not None:
        clock.wake()


async def create_reminder(request: web.Request) -> web.Response:
    character_id = known_character(request)
    body = await read_json(request, ReminderIn)
    text = checked_text(request, body.text)
    settings = request.app[SETTINGS]
    zone = zone_named(settings.timezone)
    due_at = checked_due(request, body.due_at, zone)
    count_against_rate(request)
    reminder = await request.app[REMINDERS].add(
        request[USER_ID], character_id, text, due_at, cap=settings.max_reminders_per_pair
    )
    wake_clock(request)
    return answer(reminder.view(zone), status=201)


async def patch_reminder(request: web.Request) -> web.Response:
    character_id = known_character(request)
    reminder_id = request.match_info["rid"]
    body = await read_json(request, ReminderPatch)
    if body.text is None and body.due_at is None and body.done is None:
        raise ApiError(400, "invalid_request", "nothing to change: give text, due_at or done")
    if body.done and body.due_at is not None:
        raise ApiError(
            400,
            "invalid_request",
            "a reminder marked done has no new time; give due_at or done, not both",
        )
    settings = request.app[SETTINGS]
    zone = zone_named(settings.timezone)
    text = checked_text(request, body.text) if body.text is not None else None
    due_at = checked_due(request, body.due_at, zone) if body.due_at is not None else None
    if due_at is not None:
        count_against_rate(request)

    def change(current: Reminder) -> Reminder:
        if current.status == "claimed":
            raise ApiError(409, "reminder_busy", "the reminder is being delivered right now")
        new = current
        if text is not None:
            new = msgspec.structs.replace(new, text=text)
        if due_at is not None:
            new = rescheduled(new, due_at)
        if body.done:
            new = completed(new)
        elif body.done is False and new.status == "done":
            new = reopened(new, request)
        return new

    reminder = await request.app[REMINDERS].update(
        request[USER_ID], character_id, reminder_id, change, cap=settings.max_reminders_per_pair
    )
    if reminder.status == "pending":
        wake_clock(request)
    return answer(reminder.view(zone))


def reopened(reminder: Reminder, request: web.Request) -> Reminder:
    """A reminder marked done, open again: fired if it had fired, else pending at its time
    (which must still lie ahead: else 400, and a new `due_at` is the way)."""
    if reminder.fired_at is not None:
        return msgspec.structs.replace(reminder, status="fired")
    try:
        check_due_at(reminder.due_at, time.time(), request.app[SETTINGS].reminder_max_days_ahead)
    except DueTimeRefused as exc:  # the same refusal, with the way out
        raise DueTimeRefused(exc.problem, f"{exc}: give a new due_at") from None
    return rescheduled(reminder, reminder.due_at)


async def delete_reminder(request: web.Request) -> web.Response:
    character_id = known_character(request)
    await request.app[REMINDERS].delete(request[USER_ID], character_id, request.match_info["rid"])
    return web.Response(status=204)


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters/{cid}/reminders", list_reminders)
    app.router.add_post("/api/characters/{cid}/reminders", create_reminder)
    app.router.add_patch("/api/characters/{cid}/reminders/{rid}", patch_reminder)
    app.router.add_delete("/api/characters/{cid}/reminders/{rid}", delete_reminder)
