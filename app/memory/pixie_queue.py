"""The Pixie queue: promotion triggers waiting to be consolidated into long-term memory
(design §3a; seed 001 §5: "Promotion-Trigger → Pixie-Queue, bei hoher Salienz").

The dispatcher writes a trigger when the user's salience reaches `promotion_threshold`. The
queue is reliable like the event queue: the Pixie worker moves a trigger (one script: LMOVE,
and the taking process noted in the `taken` hash) to the pair's processing list and removes
it from there only once its memories are written (`ack`); recovery puts back at the front
what a dead process had taken (`restore`). The pair is kept in
`pixie_queue:pairs` while it may have triggers, so the worker finds them without scanning.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable

import msgspec
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline

from app.memory import keys
from app.memory.commit import Blind, Write


class Trigger(msgspec.Struct, kw_only=True):
    """One promotion: the user's block (its words, message ids, turn) and what the salience
    singled out in it."""

    trigger_id: str
    user_id: str
    character_id: str
    turn_id: str
    message_ids: list[str]
    text: str  # the user's own words: the only ground a memory may have
    segments: list[str] = msgspec.field(default_factory=list)
    importance: float = 0.0
    created_at: float = 0.0
    attempts: int = 0  # consolidations that failed on a model error


_DECODER = msgspec.json.Decoder(Trigger)
_ENCODER = msgspec.json.Encoder()


def new_trigger(
    user_id: str,
    character_id: str,
    *,
    turn_id: str,
    message_ids: list[str],
    text: str,
    segments: list[str],
    importance: float,
    now: float | None = None,
) -> Trigger:
    return Trigger(
        trigger_id=uuid.uuid4().hex,
        user_id=user_id,
        character_id=character_id,
        turn_id=turn_id,
        message_ids=list(message_ids),
        text=text,
        segments=list(segments),
        importance=importance,
        created_at=time.time() if now is None else now,
    )


def decode_trigger(raw: str | bytes) -> Trigger:
    """Raises msgspec.DecodeError / ValidationError for a broken record."""
    return _DECODER.decode(raw)


def queue_push(pipe: Pipeline, trigger: Trigger) -> None:
    """The trigger's write queued on a pipeline the caller executes."""
    pipe.rpush(
        keys.pixie_queue(trigger.user_id, trigger.character_id), _ENCODER.encode(trigger).decode()
    )
    pipe.sadd(keys.pixie_pairs(), keys.pair_id(trigger.user_id, trigger.character_id))


def push_write(trigger: Trigger) -> Write:
    """The push as one part of a turn's commit (`app.memory.commit`): the dispatcher writes
    the trigger in the same atomic step as the turn."""
    return Blind(lambda pipe: queue_push(pipe, trigger))


class PixieQueue:
    """The reliable trigger queue of one pair."""

    def __init__(
        self, redis: aioredis.Redis, user_id: str, character_id: str, owner: str = ""
    ) -> None:
        self.redis = redis
        self.owner = owner  # the instance id of the process that takes triggers
        self.pair = keys.pair_id(user_id, character_id)
        self.queue = keys.pixie_queue(user_id, character_id)
        self.processing = keys.pixie_processing(user_id, character_id)
        self.taken = keys.pixie_taken(user_id, character_id)

    async def push(self, trigger: Trigger) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            queue_push(pipe, trigger)
            await pipe.execute()

    async def take(self) -> str | None:
        """Move the front trigger to the processing list, noting who took it; its raw
        record, None if empty."""
        return await self.redis.eval(_TAKE, 3, self.queue, self.processing, self.taken, self.owner)

    async def ack(self, raw: str) -> None:
        """The taken trigger is done: off the processing list and its taker forgotten, in
        one script (atomic like a transaction, a third of its cost on the worker's path)."""
        await self.redis.eval(_ACK, 2, self.processing, self.taken, raw)

    async def requeue(self, raw: str, again: Trigger) -> None:
        """A taken trigger back at the end of the queue (as `again`), in one transaction."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(self.processing, 1, raw)
            pipe.hdel(self.taken, raw)
            pipe.rpush(self.queue, _ENCODER.encode(again))
            await pipe.execute()

    async def pending(self) -> int:
        return int(await self.redis.llen(self.queue))

    async def forget_pair_if_empty(self) -> bool:
        """Take the pair off the worker's list when nothing waits or is taken (checked and
        removed in one script: a trigger pushed meanwhile keeps it on)."""
        return bool(
            await self.redis.eval(
                _DROP_IF_EMPTY, 3, self.queue, self.processing, keys.pixie_pairs(), self.pair
            )
        )

    async def clear(self) -> None:
        """Drop every waiting and taken trigger ("Alles vergessen")."""
        await self.redis.delete(self.queue, self.processing, self.taken)

    async def restore(self, owner_dead: Callable[[str], Awaitable[bool]] | None = None) -> int:
        """Recovery: the triggers taken by a dead process (every taken one when `owner_dead`
        is None) back at the front of the queue, in their order."""
        moved = 0
        for raw in reversed(keys.texts(await self.redis.lrange(self.processing, 0, -1))):
            owner = keys.text(await self.redis.hget(self.taken, raw) or "")
            if owner_dead is not None and not await owner_dead(owner):
                continue
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.lrem(self.processing, -1, raw)
                pipe.hdel(self.taken, raw)
                pipe.lpush(self.queue, raw)
                await pipe.execute()
            moved += 1
        if moved:
            await self.redis.sadd(keys.pixie_pairs(), self.pair)
        return moved


_TAKE = """
local raw = redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
if raw then redis.call('HSET', KEYS[3], raw, ARGV[1]) end
return raw
"""
_ACK = """
redis.call('LREM', KEYS[1], 1, ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
"""
_DROP_IF_EMPTY = """
if redis.call('LLEN', KEYS[1]) == 0 and redis.call('LLEN', KEYS[2]) == 0 then
  redis.call('SREM', KEYS[3], ARGV[1])
  return 1
end
return 0
"""
