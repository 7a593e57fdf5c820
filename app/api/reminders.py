"""`GET/POST /api/characters/{cid}/reminders` (SPEC §9): a pair's reminders; a due reminder
enters as the character's own impulse (the reminder clock, `app.impulses.clock`)."""

from __future__ import annotations

import datetime as dt
import logging
import time
from typing import Any

import msgspec
from aiohttp import web

from app.api.app_keys import REDIS, REMINDER_CLOCK, RUNTIME, SETTINGS
from app.api.errors import ApiError
from app.api.messages import known_character
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_json
from app.core.clock import local_moment, zone_named
from app.core.log import fields
from app.memory.reminders import (
    DueTimeError,
    DueTimeRefused,
    Reminder,
    ReminderStore,
    TooManyReminders,
    check_due_at,
    parse_due,
)

log = logging.getLogger(__name__)


class ReminderIn(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    due_at: str | float  # ISO 8601 (without an offset: the user's time zone), or epoch seconds


def due_time(value: str | float, zone: dt.tzinfo | None) -> float:
    """Epoch seconds from the body's `due_at` (the one due-time parser); 400 for anything
    else."""
    try:
        return parse_due(value, zone=zone)
    except DueTimeError as exc:
        raise ApiError(400, "invalid_due_at", str(exc)) from None


def iso_or_none(epoch: float, zone: dt.tzinfo | None) -> str | None:
    """Local ISO 8601 of a stored time; None where a time stored before validation existed
    cannot be shown (it must not make the whole list fail)."""
    try:
        return local_moment(epoch, zone).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def describe(reminder: Reminder, zone: dt.tzinfo | None) -> dict[str, Any]:
    return {
        "id": reminder.id, "text": reminder.text, "due_at": reminder.due_at,
        "due_at_iso": iso_or_none(reminder.due_at, zone),
        "status": reminder.status, "created_at": reminder.created_at,
        "fired_at": reminder.fired_at, "trigger_turn_id": reminder.trigger_turn_id,
        "impulse_turn_id": reminder.impulse_turn_id,
    }


async def list_reminders(request: web.Request) -> web.Response:
    character_id = known_character(request)
    reminders = await ReminderStore(request.app[REDIS]).list(request[USER_ID], character_id)
    zone = zone_named(request.app[SETTINGS].timezone)
    return web.json_response([describe(r, zone) for r in reminders])


async def create_reminder(request: web.Request) -> web.Response:
    character_id = known_character(request)
    body = await read_json(request, ReminderIn)
    text = bounded_text(body.text, limit=request.app[SETTINGS].max_message_chars,
                        noun="reminder text", empty_code="empty_text", long_code="text_too_long",
                        user_id=request[USER_ID])
    settings = request.app[SETTINGS]
    zone = zone_named(settings.timezone)
    due_at = due_time(body.due_at, zone)
    try:
        check_due_at(due_at, time.time(), settings.reminder_max_days_ahead)
    except DueTimeRefused as exc:
        raise ApiError(400, "invalid_due_at", str(exc)) from None
    user_id = request[USER_ID]
    runtime = request.app[RUNTIME]
    if not runtime.rate_limiter.allow(user_id):  # each reminder becomes a turn when due
        log.warning("reminder refused: rate limit", extra=fields(
            user_id=user_id, limit=runtime.rate_limiter.rate, setting="rate_limit_per_second"))
        raise ApiError(429, "rate_limited", "too many requests per second",
                       headers={"Retry-After": "1"})
    try:
        reminder = await ReminderStore(request.app[REDIS]).add(
            user_id, character_id, text, due_at, cap=settings.max_reminders_per_pair)
    except TooManyReminders:
        log.warning("reminder refused: cap", extra=fields(
            user_id=user_id, character_id=character_id,
            limit=settings.max_reminders_per_pair, setting="max_reminders_per_pair"))
        raise ApiError(429, "too_many_reminders",
                       f"at most {settings.max_reminders_per_pair} reminders may be pending "
                       "per character") from None
    clock = request.app.get(REMINDER_CLOCK)
    if clock is not None:
        clock.wake()
    return web.json_response(describe(reminder, zone), status=201)


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters/{cid}/reminders", list_reminders)
    app.router.add_post("/api/characters/{cid}/reminders", create_reminder)
