"""Lifecycle records in Redis: one hash per turn, one hash per accepted message (design §2).

Turn record ``turn:{id}`` (hash): turn_id, user_id, character_id, origin (user|character: who
started it; the attribute is `initiator`), message_ids (JSON list), state, attempts, perceived
(0|1), owner (the process instance running it), created_at, updated_at, ``at_<state>`` (time it
last entered that state), reason (why it failed). Beside it ``turn:{id}:history``: one
``{"state", "at"}`` JSON entry per transition. Both expire after ``record_ttl``. Open turns
(not delivered/failed) are also listed in ``turns:open`` and ``turns:open:{user}`` for recovery
and for a reconnecting tab.

Message record ``message:{id}`` (hash): message_id, user_id, character_id, text,
received_at, turn_id (once a turn took it). Expires after ``record_ttl``.

Every transition is one Lua script (`TRANSITION`): compare the stored state and attempts with
those the lifecycle machine started from, write the new state, append the history entry, keep
the open sets right, and apply the transition's queue effects (push the next event,
acknowledge the processed ones, release the turn marker) in the same atomic step. A crash
therefore never leaves a turn in path 2 without its event, or delivered with its event still
pending.

The attempts count is the turn's fencing epoch: recovery's `requeue` adds one, so a process
that was declared dead while it ran the turn (its heartbeat lapsed under load) has every
later transition of that run refused (`StateMoved`, `fenced`) — even when the rerun elsewhere
has brought the turn back to the same state.

They are read back as structs (`TurnRecord`, `MessageRecord`, `Transition`); what the API reads
of them is `RecordReads`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import msgspec
import redis.asyncio as aioredis

from app.memory import keys
from app.runtime.wire import AcceptedMessage
from app.storage.redis_driver import ScriptLine
from statemachine import QUEUED, TERMINAL_STATES, TurnLifecycle, build_machine

TRANSITION = """
local cur = redis.call('HGET', KEYS[1], 'state')
if not cur then return {0, '', ''} end
local attempts = redis.call('HGET', KEYS[1], 'attempts') or '1'
if cur ~= ARGV[1] or attempts ~= ARGV[13] then return {0, cur, attempts} end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'at_' .. ARGV[2], ARGV[3], 'updated_at', ARGV[3],
           'attempts', ARGV[4], 'perceived', ARGV[5], 'owner', ARGV[11])
if ARGV[9] ~= '' then redis.call('HSET', KEYS[1], 'reason', ARGV[9]) end
redis.call('RPUSH', KEYS[2], '{"state":"' .. ARGV[2] .. '","at":' .. ARGV[3] .. '}')
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
if ARGV[7] == '1' then
  redis.call('SREM', KEYS[3], ARGV[8])
  redis.call('SREM', KEYS[4], ARGV[8])
else
  redis.call('SADD', KEYS[3], ARGV[8])
  redis.call('SADD', KEYS[4], ARGV[8])
end
if ARGV[10] ~= '' then redis.call('RPUSH', KEYS[5], ARGV[10]) end
for i = 14, #ARGV do redis.call('LREM', KEYS[6], 1, ARGV[i]) end
if ARGV[12] ~= '' and redis.call('GET', KEYS[7]) == ARGV[12] then redis.call('DEL', KEYS[7]) end
return {1, ARGV[2], ''}
"""


# The accept path in one call (one request, one reply; atomic like a MULTI, cheaper to send).
# KEYS: prompt queue, message record, known pairs, the user's pairs · ARGV: queue entry, ttl,
# message_id, user_id, character_id, text, received_at, pair, wake channel ('' = none), hub
# channel ('' = none), hub envelope (the `message_accepted` for every process's tabs)
ACCEPT = """
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'message_id', ARGV[3], 'user_id', ARGV[4], 'character_id', ARGV[5],
           'text', ARGV[6], 'received_at', ARGV[7])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[8])
redis.call('SADD', KEYS[4], ARGV[5])
if ARGV[9] ~= '' then redis.call('PUBLISH', ARGV[9], ARGV[8]) end
if ARGV[10] ~= '' then redis.call('PUBLISH', ARGV[10], ARGV[11]) end
return 1
"""


class TurnRecord(msgspec.Struct, kw_only=True):
    """A turn record as read back (lenient: absent fields take defaults)."""

    turn_id: str
    user_id: str = ""
    character_id: str = ""
    initiator: str = "user"  # stored as `origin`: who started the turn
    message_ids: list[str] = msgspec.field(default_factory=list)
    state: str = QUEUED
    attempts: int = 1
    perceived: bool = False
    owner: str = ""
    created_at: float = 0.0
    updated_at: float = 0.0
    reason: str = ""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    @property
    def pair(self) -> str:
        return keys.pair_id(self.user_id, self.character_id)

    def machine(self, max_attempts: int) -> TurnLifecycle:
        return build_machine(
            self.initiator,  # type: ignore[arg-type]  # read back leniently as text (see the class)
            state=self.state,
            attempts=self.attempts,
            max_attempts=max_attempts,
            perceived=self.perceived,
        )


class MessageRecord(msgspec.Struct, kw_only=True):
    """A message record as read back (lenient: absent fields take defaults)."""

    message_id: str
    user_id: str = ""
    character_id: str = ""
    text: str = ""
    received_at: float = 0.0
    turn_id: str | None = None  # the turn that took it; None while it is queued


class Transition(msgspec.Struct, frozen=True):
    """One entry of a turn's history: the state it entered and when (epoch seconds)."""

    state: str = ""
    at: float = 0.0


class RecordReads(Protocol):
    """What the API reads about messages and turns (`Records` is it)."""

    async def message(self, message_id: str) -> MessageRecord | None: ...

    async def turn(self, turn_id: str) -> TurnRecord | None: ...

    async def history(self, turn_id: str) -> list[Transition]: ...


class StateMoved(Exception):
    """The stored state moved on under us (another actor failed or finished the turn)."""

    def __init__(self, turn_id: str, expected: str, found: str, *, fenced: bool = False) -> None:
        what = (
            f"turn {turn_id}: recovered and run again elsewhere (state {found})"
            if fenced
            else f"turn {turn_id}: expected state {expected}, found {found or 'none'}"
        )
        super().__init__(what)
        self.expected = expected
        self.found = found
        self.fenced = fenced  # the state may match, but recovery took the turn over


_JSON = msgspec.json.Encoder()
_LIST_DECODER = msgspec.json.Decoder(list[str])
_TRANSITION_DECODER = msgspec.json.Decoder(Transition)


class Records:
    """Reads and writes the turn and message records."""

    def __init__(self, redis: aioredis.Redis, ttl: int, instance_id: str) -> None:
        self.redis = redis
        self.ttl = ttl
        self.instance_id = instance_id
        self._transition = redis.register_script(TRANSITION)
        # The accept has a connection of its own: it never waits behind the orchestration's
        # calls for one of the pool's (issue 26 item 4).
        self._accept = ScriptLine(redis, ACCEPT)

    # --- accept ---------------------------------------------------------------------------
    async def accept(
        self,
        message: AcceptedMessage,
        entry: bytes,
        *,
        wake: str = "",
        announce: tuple[str, bytes] | None = None,
    ) -> None:
        """Queue `entry` (the encoded message) on the pair's prompt queue and write the
        message record, atomically; `wake` names a channel to tell other processes;
        `announce` (channel, payload) is published in the same call (the hub's envelope of
        `message_accepted`: one round trip for the whole accept)."""
        pair = keys.pair_id(message.user_id, message.character_id)
        channel, payload = announce if announce is not None else ("", b"")
        await self._accept(
            keys=[
                keys.prompt_queue(message.user_id, message.character_id),
                keys.message_record(message.message_id),
                keys.known_pairs(),
                keys.user_pairs(message.user_id),
            ],
            args=[
                entry,
                self.ttl,
                message.message_id,
                message.user_id,
                message.character_id,
                message.text,
                repr(message.received_at),
                pair,
                wake,
                channel,
                payload,
            ],
        )

    async def open(self) -> None:
        """Open the accept's own connection (at start-up: the first message after a start
        would otherwise pay for the connect and the script's load, and every accept behind
        it wait for that)."""
        await self._accept.open()

    async def aclose(self) -> None:
        """Close the accept's own connection."""
        await self._accept.aclose()

    # --- writes inside a caller's MULTI ---------------------------------------------------

    async def create(self, record: TurnRecord, also: Callable[[Any], None] | None = None) -> None:
        """Create a turn record (`add_turn`) in one transaction, with whatever `also` queues
        on the same pipeline (taking the block off the queue, pushing the impulse event)."""
        async with self.redis.pipeline(transaction=True) as pipe:
            self.add_turn(pipe, record)
            if also is not None:
                also(pipe)
            await pipe.execute()

    def add_turn(self, pipe: Any, record: TurnRecord) -> None:
        """Create a turn record in `queued` and link its messages to it."""
        now = time.time()
        key = keys.turn_record(record.turn_id)
        pipe.hset(
            key,
            mapping={
                "turn_id": record.turn_id,
                "user_id": record.user_id,
                "character_id": record.character_id,
                "origin": record.initiator,
                "message_ids": _JSON.encode(record.message_ids),
                "state": QUEUED,
                "attempts": record.attempts,
                "perceived": int(record.perceived),
                "owner": self.instance_id,
                "created_at": repr(now),
                "updated_at": repr(now),
                f"at_{QUEUED}": repr(now),
            },
        )
        pipe.rpush(keys.turn_history(record.turn_id), _JSON.encode({"state": QUEUED, "at": now}))
        pipe.expire(key, self.ttl)
        pipe.expire(keys.turn_history(record.turn_id), self.ttl)
        pipe.sadd(keys.open_turns(), record.turn_id)
        pipe.sadd(keys.user_open_turns(record.user_id), record.turn_id)
        for message_id in record.message_ids:
            pipe.hset(keys.message_record(message_id), "turn_id", record.turn_id)

    # --- transitions ----------------------------------------------------------------------
    async def transition(
        self,
        record: TurnRecord,
        machine: TurnLifecycle,
        trigger: str,
        *,
        reason: str = "",
        push: bytes | None = None,
        ack: tuple[str, ...] = (),
        release_marker: str = "",
    ) -> float:
        """Fire `trigger` on `machine` (raises IllegalTransition) and persist it atomically
        with its queue effects. Raises `StateMoved` if the stored state or attempts are not the
        ones the machine started from (attempts: recovery requeued the turn under this run).
        Updates `record` in place; returns the transition's time."""
        before = machine.state
        attempts_before, perceived_before = machine.attempts, machine.perceived
        machine.fire(trigger)
        now = time.time()
        user, character = record.user_id, record.character_id
        args: list[Any] = [
            before,
            machine.state,
            repr(now),
            machine.attempts,
            int(machine.perceived),
            self.ttl,
            "1" if machine.terminal else "0",
            record.turn_id,
            reason,
            push if push is not None else "",
            self.instance_id,
            release_marker,
            attempts_before,
            *ack,
        ]
        ok, found, found_attempts = await self._transition(
            keys=[
                keys.turn_record(record.turn_id),
                keys.turn_history(record.turn_id),
                keys.open_turns(),
                keys.user_open_turns(user),
                keys.event_queue(user, character),
                keys.event_processing(user, character),
                keys.turn_marker(user, character),
            ],
            args=args,
        )
        if not ok:
            # Put the machine back: the stored record is the truth.
            machine.state, machine.attempts, machine.perceived = (
                before,
                attempts_before,
                perceived_before,
            )
            raise StateMoved(
                record.turn_id,
                before,
                found,
                fenced=found == before and found_attempts != str(attempts_before),
            )
        record.state, record.attempts, record.perceived = (
            machine.state,
            machine.attempts,
            machine.perceived,
        )
        record.updated_at = now
        if reason:
            record.reason = reason
        return now

    # --- reads ----------------------------------------------------------------------------
    async def turn(self, turn_id: str) -> TurnRecord | None:
        raw = await self.redis.hgetall(keys.turn_record(turn_id))
        return _turn_from_hash(keys.text_hash(raw)) if raw else None

    async def turns(self, turn_ids: list[str]) -> list[TurnRecord]:
        if not turn_ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for turn_id in turn_ids:
                pipe.hgetall(keys.turn_record(turn_id))
            rows = await pipe.execute()
        return [_turn_from_hash(row) for row in rows if row]

    async def history(self, turn_id: str) -> list[Transition]:
        rows = await self.redis.lrange(keys.turn_history(turn_id), 0, -1)
        return [_TRANSITION_DECODER.decode(row) for row in rows]

    async def message(self, message_id: str) -> MessageRecord | None:
        raw = await self.redis.hgetall(keys.message_record(message_id))
        return _message_from_hash(keys.text_hash(raw)) if raw else None


def _turn_from_hash(raw: dict[str, str]) -> TurnRecord:
    return TurnRecord(
        turn_id=raw.get("turn_id", ""),
        user_id=raw.get("user_id", ""),
        character_id=raw.get("character_id", ""),
        initiator=raw.get("origin", "user"),
        message_ids=_LIST_DECODER.decode(raw["message_ids"]) if raw.get("message_ids") else [],
        state=raw.get("state", QUEUED),
        attempts=int(raw.get("attempts", 1)),
        perceived=raw.get("perceived") == "1",
        owner=raw.get("owner", ""),
        created_at=float(raw.get("created_at", 0.0)),
        updated_at=float(raw.get("updated_at", 0.0)),
        reason=raw.get("reason", ""),
    )


def _message_from_hash(raw: dict[str, str]) -> MessageRecord:
    # The hash's names are the struct's; lax conversion reads `received_at` from its text.
    return msgspec.convert(raw, MessageRecord, strict=False)
