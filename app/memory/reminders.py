"""Reminders, per pair, and the due index the reminder clock watches (SPEC §9, §6).

- `reminders:{user}:{character}` (hash): reminder id → reminder JSON.
- `reminders:due` (sorted set): every pending reminder, scored by its due time.
- `reminders:claimed` (sorted set): reminders a clock has taken, scored by claim time.

A reminder goes pending → claimed → fired. Claiming is one atomic step (`ZREM` from the due
index decides which clock gets it, when several processes share a Redis); the claimer then
delivers the impulse and marks the reminder fired. A claim that was never marked fired (the
process died in between) is put back after `reminder_claim_timeout`, so a due reminder is
never lost — at worst, after a crash, it is delivered twice.

`parse_due` is the one reader of a due time (the API's `due_at`, the reminders agent's
model output): ISO 8601 with an offset, or without one as the user's local time (setting
`timezone`), or epoch seconds. Whether the time is sensible (not past, not absurdly far) is
the caller's check (`check_due_at`), not the parser's.

`check_due_at` is the one check of what a reminder may be, made where due times enter (the
API and the reminders agent) on an already-parsed epoch time: not a finite number, more than
`PAST_GRACE_SECONDS` in the past, or further ahead than `reminder_max_days_ahead` is refused,
and nothing is written — a stored year 9999 once made the pair's reminder list fail for ever.
The per-pair cap (`max_reminders_per_pair`) is kept by the store in the same step that adds.

The reminders agent does not write: it returns a `ReminderToAdd`, which the dispatcher
stores with the turn (`add_write`, one part of the turn's commit, `app.memory.commit`).
"""

from __future__ import annotations

import datetime as dt
import math
import time
import uuid
from typing import Literal

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from app.core.clock import attach_zone
from app.memory import keys
from app.memory.commit import Blind, Write

Status = Literal["pending", "claimed", "fired"]

PAST_GRACE_SECONDS = 60  # "now" said a moment ago is not the past
DAY = 24 * 3600

Problem = Literal["not_a_time", "past", "too_far"]


class DueTimeRefused(ValueError):
    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem = problem


class TooManyReminders(Exception):
    """The pair already has `max_reminders_per_pair` pending reminders."""


def check_due_at(due_at: float, now: float, max_days_ahead: int) -> None:
    """Raise `DueTimeRefused` unless `due_at` lies in [now − 1 min, now + max_days_ahead]."""
    if not math.isfinite(due_at):
        raise DueTimeRefused("not_a_time", f"due_at {due_at!r} is not a time")
    if due_at < now - PAST_GRACE_SECONDS:
        raise DueTimeRefused("past", "due_at lies in the past (more than "
                             f"{PAST_GRACE_SECONDS} s before now)")
    if due_at > now + max_days_ahead * DAY:
        raise DueTimeRefused("too_far", f"due_at lies more than {max_days_ahead} days ahead "
                             "(setting reminder_max_days_ahead)")

# KEYS: due, claimed, pair hash · ARGV: member, reminder id, now → reminder JSON or nil
_CLAIM = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return false end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return redis.call('HGET', KEYS[3], ARGV[2])
"""

# KEYS: pair hash, due · ARGV: id, JSON, due time, member, cap (-1: none) → 1 added, 0 at cap
_ADD = """
local cap = tonumber(ARGV[5])
if cap >= 0 then
  local pending = 0
  for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
    if not string.find(raw, '"status":"fired"', 1, true) then pending = pending + 1 end
  end
  if pending >= cap then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""

# KEYS: due, claimed · ARGV: member, due time → 1 put back, 0 not claimed (any more)
_PUT_BACK = """
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
"""


class Reminder(msgspec.Struct, kw_only=True):
    id: str
    user_id: str
    character_id: str
    text: str
    due_at: float
    created_at: float
    status: Status = "pending"
    claimed_at: float | None = None
    fired_at: float | None = None
    # The turn the reminder was asked for in (None when made through the API): it becomes
    # the impulse's `ausloeser_turn_id`.
    trigger_turn_id: str | None = None
    impulse_turn_id: str | None = None

    @property
    def member(self) -> str:
        return keys.reminder_member(self.user_id, self.character_id, self.id)


class ReminderToAdd(msgspec.Struct, kw_only=True, tag="reminder"):
    """A reminder an agent intends; the dispatcher stores it with the turn."""

    reminder: Reminder


class DueTimeError(ValueError):
    """A due time that cannot be read as a moment."""


def parse_due(value: str | float, *, zone: dt.tzinfo | None) -> float:
    """Epoch seconds of a due time: ISO 8601 with an offset (or `Z`), ISO 8601 without one
    read as wall-clock time in `zone` (the user's, `app.core.clock.zone_named`; None: the
    machine's), or epoch seconds. Raises `DueTimeError`."""
    if isinstance(value, bool):
        raise DueTimeError(f"due time {value!r} is not a time")
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value <= 0:
            raise DueTimeError(f"due time {value!r} is not a time")
        return float(value)
    text = value.strip()
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DueTimeError(f"due time {value!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = attach_zone(moment, zone)
    return moment.timestamp()


def new_reminder(user_id: str, character_id: str, text: str, due_at: float, *,
                 trigger_turn_id: str | None = None, now: float | None = None) -> Reminder:
    return Reminder(id=uuid.uuid4().hex, user_id=user_id, character_id=character_id,
                    text=text.strip(), due_at=due_at,
                    created_at=time.time() if now is None else now,
                    trigger_turn_id=trigger_turn_id)


_DECODER = msgspec.json.Decoder(Reminder)
_ENCODER = msgspec.json.Encoder()


class ReminderStore:
    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._claim = redis.register_script(_CLAIM)
        self._put_back = redis.register_script(_PUT_BACK)
        self._add = redis.register_script(_ADD)

    async def add(self, user_id: str, character_id: str, text: str, due_at: float, *,
                  trigger_turn_id: str | None = None, now: float | None = None,
                  cap: int | None = None) -> Reminder:
        """Store a pending reminder; with `cap`, `TooManyReminders` (nothing written) when
        the pair already has that many pending — counted and added in one atomic step."""
        reminder = new_reminder(user_id, character_id, text, due_at,
                                trigger_turn_id=trigger_turn_id, now=now)
        if cap is None:
            async with self.redis.pipeline(transaction=True) as pipe:
                self.add_write(reminder).queue(pipe)
                await pipe.execute()
            return reminder
        added = await self._add(keys=[keys.reminders(user_id, character_id), keys.reminders_due()],
                                args=[reminder.id, _ENCODER.encode(reminder), due_at,
                                      reminder.member, cap])
        if not added:
            raise TooManyReminders(f"{cap} reminders are pending already")
        return reminder

    def add_write(self, reminder: Reminder) -> Write:
        """Storing `reminder` (pending, in the due index) as one part of a turn's commit."""
        key = keys.reminders(reminder.user_id, reminder.character_id)
        raw = _ENCODER.encode(reminder)

        def queue(pipe: Pipeline) -> None:
            pipe.hset(key, reminder.id, raw)
            pipe.zadd(keys.reminders_due(), {reminder.member: reminder.due_at})
        return Blind(queue)

    async def list(self, user_id: str, character_id: str) -> list[Reminder]:
        """Every reminder of the pair (pending and past), by due time."""
        stored = await self.redis.hgetall(keys.reminders(user_id, character_id))
        found = []
        for raw in stored.values():
            try:
                found.append(_DECODER.decode(raw))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        return sorted(found, key=lambda r: (r.due_at, r.created_at))

    async def pending(self, user_id: str, character_id: str) -> list[Reminder]:
        return [r for r in await self.list(user_id, character_id) if r.status != "fired"]

    # --- the clock's side ------------------------------------------------------------------

    async def due_members(self, now: float, limit: int = 50) -> list[str]:
        return list(await self.redis.zrangebyscore(keys.reminders_due(), "-inf", now,
                                                   start=0, num=limit))

    async def next_due(self) -> float | None:
        first = await self.redis.zrange(keys.reminders_due(), 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    async def claim(self, member: str, now: float | None = None) -> Reminder | None:
        """Take a due reminder; None when another clock took it first (or it is unreadable)."""
        now = time.time() if now is None else now
        user_id, character_id, reminder_id = keys.split_reminder_member(member)
        raw = await self._claim(keys=[keys.reminders_due(), keys.reminders_claimed(),
                                      keys.reminders(user_id, character_id)],
                                args=[member, reminder_id, now])
        if raw is None:
            return None
        try:
            reminder = _DECODER.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            await self.redis.zrem(keys.reminders_claimed(), member)
            raise
        reminder = msgspec.structs.replace(reminder, status="claimed", claimed_at=now)
        await self._save(reminder)
        return reminder

    async def mark_fired(self, reminder: Reminder, impulse_turn_id: str,
                         now: float | None = None) -> Reminder:
        fired = msgspec.structs.replace(reminder, status="fired", impulse_turn_id=impulse_turn_id,
                                        fired_at=time.time() if now is None else now)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(keys.reminders(fired.user_id, fired.character_id), fired.id,
                      _ENCODER.encode(fired))
            pipe.zrem(keys.reminders_claimed(), fired.member)
            await pipe.execute()
        return fired

    async def put_back_stale(self, older_than: float) -> list[str]:
        """Claims made before `older_than` that were never delivered go back to the due
        index; returns their members."""
        stale = await self.redis.zrangebyscore(keys.reminders_claimed(), "-inf", older_than)
        restored = []
        for member in stale:
            user_id, character_id, reminder_id = keys.split_reminder_member(member)
            raw = await self.redis.hget(keys.reminders(user_id, character_id), reminder_id)
            if raw is None:
                await self.redis.zrem(keys.reminders_claimed(), member)
                continue
            reminder = _DECODER.decode(raw)
            if await self._put_back(keys=[keys.reminders_due(), keys.reminders_claimed()],
                                    args=[member, reminder.due_at]):
                await self._save(msgspec.structs.replace(reminder, status="pending",
                                                         claimed_at=None))
                restored.append(member)
        return restored

    async def _save(self, reminder: Reminder) -> None:
        await self.redis.hset(keys.reminders(reminder.user_id, reminder.character_id),
                              reminder.id, _ENCODER.encode(reminder))
