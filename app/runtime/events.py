"""Events: their producers, their payload rules, and the reliable queue they wait in.

Producers (seed 001 §3.1.1; design §5), each building its payload struct
(`app.pipeline.vocabulary`, whose docstring lists the keys):

=================  ===========  ===============  ======================================
producer           ``source``   ``typ``          ``turn_id``
=================  ===========  ===============  ======================================
`user_event`       user         message          new (the block's turn)
`impulse_event`    character    message          new; payload `eigener_gedanke`,
                                                 `reiz_herkunft="eigener_impuls"`,
                                                 `gedanke_arousal`, `ausloeser_turn_id`
`continue_event`   character    continue         **inherited** from the run that asked
`awaiting_event`   character    awaiting_user    inherited; carries the agent context
=================  ===========  ===============  ======================================

Payload rules: `user_prompt` is absent (not empty) on an impulse — `ImpulsePayload` has no
such field; `gedanke_arousal` and `ausloeser_turn_id` are always present on an impulse,
`None` when unknown; an impulse without a thought is a defect and raises
`ImpulseWithoutThought`. `gedanke_arousal` is validated where it enters: here by the one
validator (`app.memory.state.validate_thought_arousal`: a float in [0.0, 1.0] or None;
anything else is rejected and reported, never clamped), and where a stored event is read by
its payload's type (`UnitFloat | None`: a value that does not fit is dropped to None and
reported, `app.runtime.wire.decode_event`). A continue run carries its parent's level on as
it was read.

The queue (`EventQueue`) is reliable: an event taken for processing is moved atomically (one
MULTI: LREM from the queue, RPUSH to the processing list; LMOVE for the parked one) to the
pair's processing list and stays there until it is acknowledged; recovery moves what is left
there back to the front of the queue.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec
import redis.asyncio as aioredis

from app.core.emotion import Emotion, copy_emotion
from app.memory import keys
from app.memory.state import validate_thought_arousal
from app.pipeline.vocabulary import (
    AwaitingPayload,
    Continue,
    ContinuePayload,
    Event,
    EventPayload,
    EventSource,
    EventType,
    ImpulsePayload,
    ImpulseWithoutThought,
    UserPayload,
)
from app.runtime.wire import decode_event, encode


def new_id() -> str:
    return uuid.uuid4().hex


def carried_thought_arousal(parent: Event[EventPayload]) -> float | None:
    """The thought's level a follow-up run carries on: its parent's, as it was read (a
    user event has none)."""
    payload = parent.payload
    if isinstance(payload, ImpulsePayload | ContinuePayload):
        return payload.thought_arousal
    return None


def _event(
    user_id: str,
    character_id: str,
    source: EventSource,
    typ: EventType,
    payload: EventPayload,
    trigger_count: int = 0,
) -> Event[EventPayload]:
    return Event(
        event_id=new_id(),
        user_id=user_id,
        character_id=character_id,
        source=source,
        typ=typ,
        payload=payload,
        trigger_count=trigger_count,
        erstellt_am=time.time(),
    )


def user_event(
    user_id: str,
    character_id: str,
    turn_id: str,
    message_ids: list[str],
    user_prompt: str,
    perceived: Emotion | None = None,
    language: str = "",
) -> Event[EventPayload]:
    """The user path's event: a new turn answering the block `message_ids`, with what
    path 1 perceived of the user (nothing: the nine empty)."""
    payload = UserPayload(
        language=language, turn_id=turn_id, message_ids=list(message_ids), user_prompt=user_prompt
    )
    if perceived is not None:
        payload = copy_emotion(perceived, payload)
    return _event(user_id, character_id, "user", "message", payload)


def impulse_event(
    user_id: str,
    character_id: str,
    thought: str,
    *,
    arousal: Any = None,
    trigger_turn_id: str | None = None,
) -> Event[EventPayload]:
    """An own impulse (due reminder, idle reflection): a new turn with no user words.

    Raises `ImpulseWithoutThought` without a thought and `ThoughtArousalError` for an arousal
    that is not a float in [0.0, 1.0] or None (rejected where it enters, never clamped).
    """
    if not isinstance(thought, str) or not thought.strip():
        raise ImpulseWithoutThought(
            f"impulse for {keys.pair_id(user_id, character_id)} has no thought: {thought!r}"
        )
    payload = ImpulsePayload(
        turn_id=new_id(),
        thought=thought,
        thought_arousal=validate_thought_arousal(arousal),
        trigger_turn_id=trigger_turn_id,
    )
    return _event(user_id, character_id, "character", "message", payload)


def continue_event(parent: Event[EventPayload], request: Continue) -> Event[EventPayload]:
    """A follow-up run the character asked for: same turn, same message ids, one more
    trigger. The thought's level travels along (`carried_thought_arousal`); the thought and
    its trigger turn do not (seed 001 §3.1.1: a retry carries no impulse)."""
    payload = ContinuePayload(
        **msgspec.structs.asdict(request),
        turn_id=parent.payload.turn_id,
        message_ids=parent.message_ids,
        thought_arousal=carried_thought_arousal(parent),
    )
    return _event(
        parent.user_id,
        parent.character_id,
        "character",
        "continue",
        payload,
        trigger_count=parent.trigger_count + 1,
    )


def awaiting_event(
    parent: Event[EventPayload], agent_context: dict[str, Any]
) -> Event[EventPayload]:
    """An agent's follow-up question: the context waits for the next user message."""
    payload = AwaitingPayload(turn_id=parent.payload.turn_id, agent_context=dict(agent_context))
    return _event(
        parent.user_id,
        parent.character_id,
        "character",
        "awaiting_user",
        payload,
        trigger_count=parent.trigger_count,
    )


class EventQueue:
    """The reliable FIFO event queue of one pair, plus its processing and parked lists."""

    def __init__(self, redis: aioredis.Redis, user_id: str, character_id: str) -> None:
        self.redis = redis
        self.queue = keys.event_queue(user_id, character_id)
        self.processing = keys.event_processing(user_id, character_id)
        self.awaiting = keys.event_awaiting(user_id, character_id)

    async def push(self, event: Event[EventPayload]) -> None:
        await self.redis.rpush(self.queue, encode(event))

    async def find(self, turn_id: str) -> tuple[str, Event[EventPayload]] | None:
        """The first queued event of `turn_id`, wherever it waits in the queue."""
        for raw in await self.redis.lrange(self.queue, 0, -1):
            try:
                event = decode_event(raw)
            except Exception:  # noqa: BLE001, S112 - the front-of-queue path reports broken records
                continue
            if event.turn_id == turn_id:
                return keys.text(raw), event
        return None

    async def take(self, raw: str) -> bool:
        """Move the event `raw` to the processing list in one transaction; it stays there
        until `ack`. False if it is no longer queued."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrem(self.queue, 1, raw)
            pipe.rpush(self.processing, raw)
            removed, _ = await pipe.execute()
        if not removed:
            await self.redis.lrem(self.processing, -1, raw)
        return bool(removed)

    async def ack(self, raw: str) -> None:
        await self.redis.lrem(self.processing, 1, raw)

    async def drop(self, raw: str) -> None:
        """Remove an unreadable or obsolete queued event without processing it."""
        await self.redis.lrem(self.queue, 1, raw)

    async def park(self) -> list[str]:
        """Move the front (`awaiting_user`) event to the parked slot; a newer question
        replaces an older one, whose raw records are returned for the log."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.lrange(self.awaiting, 0, -1)
            pipe.delete(self.awaiting)
            pipe.lmove(self.queue, self.awaiting, "LEFT", "RIGHT")
            replaced, _, _ = await pipe.execute()
        return list(replaced)

    async def take_parked(self) -> str | None:
        """Move the parked event to the processing list: the user turn that resumes it
        acknowledges both together."""
        moved = await self.redis.lmove(self.awaiting, self.processing, "LEFT", "RIGHT")
        return None if moved is None else keys.text(moved)

    async def restore(self) -> int:
        """Recovery: put every taken-but-unacknowledged event back at the front, in order."""
        moved = 0
        while await self.redis.lmove(self.processing, self.queue, "RIGHT", "LEFT") is not None:
            moved += 1
        return moved
