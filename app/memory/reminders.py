"""Reminders, per pair, and the due index the reminder clock watches (design §9, §6).

- `reminders:{user}:{character}` (hash): reminder id → reminder JSON.
- `reminders:due` (sorted set): every pending reminder, scored by its due time.
- `reminders:claimed` (sorted set): reminders a clock has taken, scored by claim time.

A reminder goes pending → claimed → fired; the user may then mark it done (or snooze it:
pending again, at a new time), delete it, or change its text or time while it waits. Its
status and the indexes always agree: pending ⇔ in the due index, claimed ⇔ in the claimed
index, fired or done ⇔ in neither.

Every change of a stored reminder is one compare-and-set (`_SET_IF_UNCHANGED`): the new JSON
and the index entries are written only if the reminder still holds exactly the JSON the
change was computed from; otherwise it is computed again from what is there now. So the
clock (claim, fired, put back), the user's edits (the API) and a turn's agent (delete, move;
through the turn's commit, which `WATCH`es the pair's hash) never lose each other's change,
and a reminder deleted while it was being delivered is not written back. Claiming is that
compare-and-set plus "still in the due index" (which clock gets it, when several processes
share a Redis). A claim that was never marked fired (the process died in between) is put
back after `reminder_claim_timeout`, so a due reminder is never lost — at worst, after a
crash, it is delivered twice.

`parse_due` is the one reader of a due time (the API's `due_at`, the reminders agent's
model output): ISO 8601 with an offset, or without one as the user's local time (setting
`timezone`), or epoch seconds. Whether the time is sensible (not past, not absurdly far) is
the caller's check (`check_due_at`), not the parser's.

`check_due_at` is the one check of what a reminder may be, made where due times enter (the
API and the reminders agent) on an already-parsed epoch time: not a finite number, more than
`PAST_GRACE_SECONDS` in the past, or further ahead than `reminder_max_days_ahead` is refused,
and nothing is written — a stored year 9999 once made the pair's reminder list fail for ever.
The per-pair cap (`max_reminders_per_pair`, pending and claimed ones) is kept by the store in
the same step that adds one or makes one pending again.

The reminders agent does not write: it returns a `ReminderToAdd` or a `ReminderChange`
(delete, move), which the dispatcher applies with the turn (`add_write`, `change_write`:
parts of the turn's commit, `app.memory.commit`).

One module: the reminder store and its due index must always agree, so every write that touches
both is here.
"""

from __future__ import annotations

import builtins  # the class's method `list` hides the builtin in its body's annotations
import datetime as dt
import logging
import math
import time
import uuid
from collections.abc import Callable
from typing import Literal

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from app.core.clock import attach_zone, local_moment
from app.core.log import fields
from app.core.refusal import RefusedKind
from app.memory import keys
from app.memory.commit import Blind, Write
from app.memory.views import ReminderView
from app.storage.errors import Missing

log = logging.getLogger(__name__)

Status = Literal["pending", "claimed", "fired", "done"]
OPEN: tuple[Status, ...] = ("pending", "claimed")  # what the cap counts

PAST_GRACE_SECONDS = 60  # "now" said a moment ago is not the past
DAY = 24 * 3600
ATTEMPTS = 10  # compare-and-set rounds before a change gives up

Problem = Literal["not_a_time", "past", "too_far"]


class DueTimeRefused(RefusedKind, ValueError):
    """A due time a new reminder cannot have (400 `invalid_due_at`); `problem` says why."""

    STATUS, CODE = 400, "invalid_due_at"

    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem = problem


class TooManyReminders(RefusedKind):
    """The pair already has `max_reminders_per_pair` pending reminders (429)."""

    STATUS, CODE = 429, "too_many_reminders"

    def __init__(self, cap: int) -> None:
        super().__init__(f"at most {cap} reminders may be pending per character")


def cap_reached(user_id: str, character_id: str, cap: int) -> TooManyReminders:
    """The refusal of a reminder past the pair's cap, logged where the store refuses it."""
    log.warning(
        "reminder refused: cap",
        extra=fields(
            user_id=user_id, character_id=character_id, limit=cap, setting="max_reminders_per_pair"
        ),
    )
    return TooManyReminders(cap)


def check_due_at(due_at: float, now: float, max_days_ahead: int) -> None:
    """Raise `DueTimeRefused` unless `due_at` lies in [now − 1 min, now + max_days_ahead]."""
    if not math.isfinite(due_at):
        raise DueTimeRefused("not_a_time", f"due_at {due_at!r} is not a time")
    if due_at < now - PAST_GRACE_SECONDS:
        raise DueTimeRefused(
            "past", f"due_at lies in the past (more than {PAST_GRACE_SECONDS} s before now)"
        )
    if due_at > now + max_days_ahead * DAY:
        raise DueTimeRefused(
            "too_far",
            f"due_at lies more than {max_days_ahead} days ahead (setting reminder_max_days_ahead)",
        )


# KEYS: pair hash, due · ARGV: id, JSON, due time, member, cap (-1: none) → 1 added, 0 at cap
_ADD = """
local cap = tonumber(ARGV[5])
if cap >= 0 then
  local open = 0
  for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
    if string.find(raw, '"status":"pending"', 1, true)
        or string.find(raw, '"status":"claimed"', 1, true) then open = open + 1 end
  end
  if open >= cap then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
return 1
"""

# KEYS: pair hash, due, claimed · ARGV: id, member, expected JSON, new JSON ("" deletes it),
# index ("due", "claimed" or "none"), score, cap (-1: none; else the new state must keep the
# pair's open reminders within it), precondition ("due": the member must still be in the due
# index — a claim) → {1} written, {0, current JSON or ""} changed meanwhile (or gone),
# {2} not in the due index (another clock claimed it), {3} at the cap. Nothing is written
# unless the answer is {1}.
_SET_IF_UNCHANGED = """
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current or current ~= ARGV[3] then return {0, current or ''} end
if ARGV[8] == 'due' and not redis.call('ZSCORE', KEYS[2], ARGV[2]) then return {2} end
local cap = tonumber(ARGV[7])
if cap >= 0 then
  local open = 0
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    if all[i] ~= ARGV[1] and (string.find(all[i + 1], '"status":"pending"', 1, true)
        or string.find(all[i + 1], '"status":"claimed"', 1, true)) then open = open + 1 end
  end
  if open >= cap then return {3} end
end
if ARGV[4] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
end
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
if ARGV[5] == 'due' then redis.call('ZADD', KEYS[2], ARGV[6], ARGV[2]) end
if ARGV[5] == 'claimed' then redis.call('ZADD', KEYS[3], ARGV[6], ARGV[2]) end
return {1}
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

    def view(self, zone: dt.tzinfo | None) -> ReminderView:
        """The reminder as its owner sees it, its time also in the user's zone."""
        return ReminderView(
            id=self.id,
            text=self.text,
            due_at=self.due_at,
            due_at_iso=iso_or_none(self.due_at, zone),
            status=self.status,
            created_at=self.created_at,
            fired_at=self.fired_at,
            trigger_turn_id=self.trigger_turn_id,
            impulse_turn_id=self.impulse_turn_id,
        )


def iso_or_none(epoch: float, zone: dt.tzinfo | None) -> str | None:
    """Local ISO 8601 of a stored time; None where a time stored before validation existed
    cannot be shown (it must not make the whole list fail)."""
    try:
        return local_moment(epoch, zone).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


class ReminderToAdd(msgspec.Struct, kw_only=True, tag="reminder"):
    """A reminder an agent intends; the dispatcher stores it with the turn."""

    reminder: Reminder


class ReminderChange(msgspec.Struct, kw_only=True, tag="reminder_change"):
    """A change an agent intends on an existing reminder: delete it, or move it to `due_at`
    (pending again at that time, also when it had fired); the dispatcher applies it with the
    turn. `cap`: the most open reminders the pair may have after a move."""

    user_id: str
    character_id: str
    reminder_id: str
    delete: bool = False
    due_at: float | None = None
    cap: int | None = None


class ReminderMissing(Missing):
    """No such reminder of this pair: 404 `not_found`."""


class ReminderBusy(Exception):
    """The reminder is being delivered right now (claimed): it cannot be changed."""


class DueTimeError(RefusedKind, ValueError):
    """A due time that cannot be read as a moment (400 `invalid_due_at`)."""

    STATUS, CODE = 400, "invalid_due_at"


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


def new_reminder(
    user_id: str,
    character_id: str,
    text: str,
    due_at: float,
    *,
    trigger_turn_id: str | None = None,
    now: float | None = None,
) -> Reminder:
    return Reminder(
        id=uuid.uuid4().hex,
        user_id=user_id,
        character_id=character_id,
        text=text.strip(),
        due_at=due_at,
        created_at=time.time() if now is None else now,
        trigger_turn_id=trigger_turn_id,
    )


def rescheduled(reminder: Reminder, due_at: float) -> Reminder:
    """`reminder` pending again at `due_at` (a move, a snooze of one that fired)."""
    return msgspec.structs.replace(reminder, due_at=due_at, status="pending", claimed_at=None)


def completed(reminder: Reminder) -> Reminder:
    """`reminder` marked done by the user: it will not (or not again) be delivered."""
    return msgspec.structs.replace(reminder, status="done", claimed_at=None)


_DECODER = msgspec.json.Decoder(Reminder)
_ENCODER = msgspec.json.Encoder()

# `_SET_IF_UNCHANGED`'s answers
_WRITTEN, _CHANGED, _NOT_DUE, _AT_CAP = 1, 0, 2, 3


def _index_of(reminder: Reminder | None) -> tuple[str, float]:
    """Which index a reminder in this state belongs to, and its score there."""
    if reminder is None:
        return "none", 0.0
    if reminder.status == "pending":
        return "due", reminder.due_at
    if reminder.status == "claimed":
        return "claimed", reminder.claimed_at or time.time()
    return "none", 0.0


class ReminderStore:
    def __init__(self, redis: aioredis.Redis) -> None:
        self.redis = redis
        self._add = redis.register_script(_ADD)
        self._set_if_unchanged = redis.register_script(_SET_IF_UNCHANGED)

    async def add(
        self,
        user_id: str,
        character_id: str,
        text: str,
        due_at: float,
        *,
        trigger_turn_id: str | None = None,
        now: float | None = None,
        cap: int | None = None,
    ) -> Reminder:
        """Store a pending reminder; with `cap`, `TooManyReminders` (nothing written) when
        the pair already has that many open — counted and added in one atomic step."""
        reminder = new_reminder(
            user_id, character_id, text, due_at, trigger_turn_id=trigger_turn_id, now=now
        )
        if cap is None:
            async with self.redis.pipeline(transaction=True) as pipe:
                self.add_write(reminder).queue(pipe)
                await pipe.execute()
            return reminder
        added = await self._add(
            keys=[keys.reminders(user_id, character_id), keys.reminders_due()],
            args=[reminder.id, _ENCODER.encode(reminder), due_at, reminder.member, cap],
        )
        if not added:
            raise cap_reached(user_id, character_id, cap)
        return reminder

    def add_write(self, reminder: Reminder) -> Write:
        """Storing `reminder` (pending, in the due index) as one part of a turn's commit."""
        key = keys.reminders(reminder.user_id, reminder.character_id)
        raw = _ENCODER.encode(reminder)

        def queue(pipe: Pipeline) -> None:
            pipe.hset(key, reminder.id, raw)
            pipe.zadd(keys.reminders_due(), {reminder.member: reminder.due_at})

        return Blind(queue)

    def change_write(self, change: ReminderChange) -> ChangeWrite:
        """`change` as one part of a turn's commit; after it, `.done` says whether it
        applied (False: the reminder was gone, or a move would pass the cap)."""
        return ChangeWrite(change)

    async def get(self, user_id: str, character_id: str, reminder_id: str) -> Reminder:
        raw = await self.redis.hget(keys.reminders(user_id, character_id), reminder_id)
        if raw is None:
            raise ReminderMissing(f"there is no reminder {reminder_id!r}")
        return _DECODER.decode(raw)

    async def list(self, user_id: str, character_id: str) -> builtins.list[Reminder]:
        """Every reminder of the pair (pending and past), by due time."""
        stored = await self.redis.hgetall(keys.reminders(user_id, character_id))
        found = []
        for raw in stored.values():
            try:
                found.append(_DECODER.decode(raw))
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
        return sorted(found, key=lambda r: (r.due_at, r.created_at))

    async def pending(self, user_id: str, character_id: str) -> builtins.list[Reminder]:
        """The open reminders (waiting, or being delivered right now)."""
        return [r for r in await self.list(user_id, character_id) if r.status in OPEN]

    # --- the user's changes ----------------------------------------------------------------

    async def update(
        self,
        user_id: str,
        character_id: str,
        reminder_id: str,
        change: Callable[[Reminder], Reminder],
        *,
        cap: int | None = None,
    ) -> Reminder:
        """Write what `change` makes of the stored reminder (computed again if the reminder
        changed meanwhile). `ReminderMissing`; `TooManyReminders` when the changed reminder
        is open and the pair would pass `cap`; whatever `change` raises. Nothing is written
        on any of them."""
        new = await self._rewrite(user_id, character_id, reminder_id, change, cap)
        assert new is not None
        return new

    async def delete(self, user_id: str, character_id: str, reminder_id: str) -> None:
        """Remove the reminder (from its hash and every index); `ReminderMissing` when there
        is none."""
        await self._rewrite(user_id, character_id, reminder_id, lambda current: None)

    async def _rewrite(
        self,
        user_id: str,
        character_id: str,
        reminder_id: str,
        change: Callable[[Reminder], Reminder | None],
        cap: int | None = None,
    ) -> Reminder | None:
        key = keys.reminders(user_id, character_id)
        for _ in range(ATTEMPTS):
            raw = await self.redis.hget(key, reminder_id)
            if raw is None:
                raise ReminderMissing(f"there is no reminder {reminder_id!r}")
            current = _DECODER.decode(raw)
            new = change(current)
            opens = new is not None and new.status in OPEN and current.status not in OPEN
            answer = await self._write(current, raw, new, cap=cap if opens else None)
            if answer == _WRITTEN:
                return new
            if answer == _AT_CAP and cap is not None:  # only a write given a cap is at it
                raise cap_reached(user_id, character_id, cap)
        raise RuntimeError(f"reminder {reminder_id!r} kept changing; gave up after {ATTEMPTS}")

    async def restore(self, reminders: builtins.list[Reminder]) -> int:
        """Store the reminders this pair lacks (ids kept; one already there is left as it
        is), each in the index its state belongs to; returns how many were added. An
        import's step: it ends no reminder and counts against no cap."""
        added = 0
        for reminder in reminders:
            key = keys.reminders(reminder.user_id, reminder.character_id)
            if not await self.redis.hsetnx(key, reminder.id, _ENCODER.encode(reminder)):
                continue
            added += 1
            index, score = _index_of(reminder)
            if index == "due":
                await self.redis.zadd(keys.reminders_due(), {reminder.member: score})
            elif index == "claimed":  # delivered here never: the clock puts it back
                await self.redis.zadd(keys.reminders_claimed(), {reminder.member: score})
        return added

    # --- the clock's side ------------------------------------------------------------------

    async def due_members(self, now: float, limit: int = 50) -> builtins.list[str]:
        return keys.texts(
            await self.redis.zrangebyscore(keys.reminders_due(), "-inf", now, start=0, num=limit)
        )

    async def next_due(self) -> float | None:
        first = await self.redis.zrange(keys.reminders_due(), 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    async def claim(self, member: str, now: float | None = None) -> Reminder | None:
        """Take a due reminder; None when another clock took it first, or it is gone or
        unreadable (then its stale index entry is dropped)."""
        now = time.time() if now is None else now
        user_id, character_id, reminder_id = keys.split_reminder_member(member)
        key = keys.reminders(user_id, character_id)
        for _ in range(ATTEMPTS):
            raw = await self.redis.hget(key, reminder_id)
            try:
                reminder = _DECODER.decode(raw) if raw is not None else None
            except (msgspec.DecodeError, msgspec.ValidationError):
                await self.redis.zrem(keys.reminders_due(), member)
                raise
            if reminder is None or reminder.status != "pending":
                await self.redis.zrem(keys.reminders_due(), member)
                return None
            assert raw is not None  # the reminder was read from it
            claimed = msgspec.structs.replace(reminder, status="claimed", claimed_at=now)
            answer = await self._write(reminder, raw, claimed, only_if_due=True)
            if answer == _WRITTEN:
                return claimed
            if answer == _NOT_DUE:
                return None
        return None

    async def mark_fired(
        self, reminder: Reminder, impulse_turn_id: str, now: float | None = None
    ) -> Reminder | None:
        """The claimed `reminder` was delivered. None when the user changed or deleted it
        meanwhile: what they did stands (a deleted reminder is not written back)."""
        fired = msgspec.structs.replace(
            reminder,
            status="fired",
            impulse_turn_id=impulse_turn_id,
            fired_at=time.time() if now is None else now,
        )
        if await self._write(reminder, _ENCODER.encode(reminder), fired) == _WRITTEN:
            return fired
        await self.redis.zrem(keys.reminders_claimed(), reminder.member)  # gone: no claim left
        return None

    async def put_back_stale(self, older_than: float) -> builtins.list[str]:
        """Claims made before `older_than` that were never delivered go back to the due
        index; returns their members."""
        stale = keys.texts(
            await self.redis.zrangebyscore(keys.reminders_claimed(), "-inf", older_than)
        )
        restored = []
        for member in stale:
            user_id, character_id, reminder_id = keys.split_reminder_member(member)
            raw = await self.redis.hget(keys.reminders(user_id, character_id), reminder_id)
            reminder = _DECODER.decode(raw) if raw is not None else None
            if reminder is None or reminder.status != "claimed":
                await self.redis.zrem(keys.reminders_claimed(), member)
                continue
            assert raw is not None  # the reminder was read from it
            back = msgspec.structs.replace(reminder, status="pending", claimed_at=None)
            if await self._write(reminder, raw, back) == _WRITTEN:
                restored.append(member)
        return restored

    async def _write(
        self,
        current: Reminder,
        raw: bytes | str,
        new: Reminder | None,
        *,
        cap: int | None = None,
        only_if_due: bool = False,
    ) -> int:
        index, score = _index_of(new)
        answer = await self._set_if_unchanged(
            keys=[
                keys.reminders(current.user_id, current.character_id),
                keys.reminders_due(),
                keys.reminders_claimed(),
            ],
            args=[
                current.id,
                current.member,
                raw,
                _ENCODER.encode(new) if new is not None else "",
                index,
                score,
                -1 if cap is None else cap,
                "due" if only_if_due else "",
            ],
        )
        return int(answer[0])


class ChangeWrite:
    """An agent's change of an existing reminder inside a turn's commit: the reminder is
    read under `WATCH` and changed from what is there then, so an edit the user made
    meanwhile (text, time, done) is kept and a reminder deleted meanwhile stays deleted."""

    def __init__(self, change: ReminderChange) -> None:
        self.change = change
        self.key = keys.reminders(change.user_id, change.character_id)
        self.watch = (self.key,)
        self.done = False
        self._new: Reminder | None = None
        self._member = keys.reminder_member(change.user_id, change.character_id, change.reminder_id)

    async def read(self, pipe: Pipeline) -> None:
        self.done = False
        raw = await pipe.hget(self.key, self.change.reminder_id)
        if raw is None:
            return  # deleted meanwhile
        try:
            current = _DECODER.decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if self.change.delete:
            self._new, self.done = None, True
            return
        if self.change.due_at is None:
            return
        cap = self.change.cap
        if cap is not None and current.status not in OPEN:
            others = [
                r
                for field, r in (await pipe.hgetall(self.key)).items()
                if field != self.change.reminder_id
            ]
            if sum(1 for r in others if _open(r)) >= cap:
                return  # a move would pass the cap (the agent checked; the user added since)
        self._new, self.done = rescheduled(current, self.change.due_at), True

    def queue(self, pipe: Pipeline) -> None:
        if not self.done:
            return
        if self._new is None:
            pipe.hdel(self.key, self.change.reminder_id)
        else:
            pipe.hset(self.key, self.change.reminder_id, _ENCODER.encode(self._new))
        pipe.zrem(keys.reminders_due(), self._member)
        pipe.zrem(keys.reminders_claimed(), self._member)
        if self._new is not None:
            pipe.zadd(keys.reminders_due(), {self._member: self._new.due_at})


def _open(raw: bytes | str) -> bool:
    try:
        return _DECODER.decode(raw).status in OPEN
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
