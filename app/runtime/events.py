"""Events: their producers, their payload rules, and the reliable queue they wait in.

Producers (seed 001 §3.1.1; SPEC §5):

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

Payload rules: `user_prompt` is absent (not empty) on an impulse; `gedanke_arousal` and
`ausloeser_turn_id` are always present on an impulse, `None` when unknown; an impulse without
a thought is a defect and raises `ImpulseWithoutThought`. `gedanke_arousal` is validated where
it enters (`app.memory.state.validate_thought_arousal`, the one reader): a float in
[0.0, 1.0] or None; anything else is rejected and reported, never clamped.

The queue (`EventQueue`) is reliable: an event taken for processing is moved atomically (one
MULTI: LREM from the queue, RPUSH to the processing list; LMOVE for the parked one) to the
pair's processing list and stays there until it is acknowledged; recovery moves what is left
there back to the front of the queue.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import redis.asyncio as aioredis

from app.memory import keys
from app.memory.state import ThoughtArousalError, validate_thought_arousal
from app.pipeline.vocabulary import (
    OWN_IMPULSE,
    P_AGENT_CONTEXT,
    P_MESSAGE_IDS,
    P_STIMULUS_ORIGIN,
    P_THOUGHT,
    P_THOUGHT_AROUSAL,
    P_TRIGGER_TURN_ID,
    P_TURN_ID,
    P_USER_PROMPT,
    Event,
    ImpulseWithoutThought,
)
from app.runtime.wire import decode_event, encode


def new_id() -> str:
    return uuid.uuid4().hex


def carried_thought_arousal(parent: Event) -> float | None:
    """The thought's arousal a follow-up run carries on, read through the one validator
    (`validate_thought_arousal`) its run will read it through; an invalid stored value was
    already reported there and travels on as None ("no level")."""
    try:
        return validate_thought_arousal(parent.payload.get(P_THOUGHT_AROUSAL))
    except ThoughtArousalError:
        return None


def _event(user_id: str, character_id: str, source: str, typ: str, payload: dict[str, Any],
           trigger_count: int = 0) -> Event:
    return Event(event_id=new_id(), user_id=user_id, character_id=character_id,
                 source=source, typ=typ, payload=payload,  # type: ignore[arg-type]
                 trigger_count=trigger_count, erstellt_am=time.time())


def user_event(user_id: str, character_id: str, turn_id: str, message_ids: list[str],
               user_prompt: str, extra: dict[str, Any] | None = None) -> Event:
    """The user path's event: a new turn answering the block `message_ids`."""
    payload = dict(extra or {})
    payload.update({P_TURN_ID: turn_id, P_MESSAGE_IDS: list(message_ids),
                    P_USER_PROMPT: user_prompt})
    return _event(user_id, character_id, "user", "message", payload)


def impulse_event(user_id: str, character_id: str, thought: str, *,
                  arousal: Any = None, trigger_turn_id: str | None = None) -> Event:
    """An own impulse (due reminder, idle reflection): a new turn with no user words.

    Raises `ImpulseWithoutThought` without a thought and `ThoughtArousalError` for an arousal
    that is not a float in [0.0, 1.0] or None (rejected where it enters, never clamped).
    """
    if not isinstance(thought, str) or not thought.strip():
        raise ImpulseWithoutThought(
            f"impulse for {keys.pair_id(user_id, character_id)} has no thought: {thought!r}")
    payload = {
        P_TURN_ID: new_id(),
        P_MESSAGE_IDS: [],
        P_THOUGHT: thought,
        P_STIMULUS_ORIGIN: OWN_IMPULSE,
        P_THOUGHT_AROUSAL: validate_thought_arousal(arousal),
        P_TRIGGER_TURN_ID: trigger_turn_id,
    }
    return _event(user_id, character_id, "character", "message", payload)


def continue_event(parent: Event, request: dict[str, Any]) -> Event:
    """A follow-up run the character asked for: same turn, same message ids, one more
    trigger. The thought's arousal travels along (read through `thought_arousal`, the same
    reader the follow-up run uses); the thought and its trigger turn do not (seed 001
    §3.1.1: a retry carries no impulse)."""
    payload = dict(request)
    payload[P_TURN_ID] = parent.turn_id
    payload[P_MESSAGE_IDS] = parent.message_ids
    payload[P_THOUGHT_AROUSAL] = carried_thought_arousal(parent)
    return _event(parent.user_id, parent.character_id, "character", "continue", payload,
                  trigger_count=parent.trigger_count + 1)


def awaiting_event(parent: Event, agent_context: dict[str, Any]) -> Event:
    """An agent's follow-up question: the context waits for the next user message."""
    payload = {P_TURN_ID: parent.turn_id, P_AGENT_CONTEXT: dict(agent_context)}
    return _event(parent.user_id, parent.character_id, "character", "awaiting_user", payload,
                  trigger_count=parent.trigger_count)


class EventQueue:
    """The reliable FIFO event queue of one pair, plus its processing and parked lists."""

    def __init__(self, redis: aioredis.Redis, user_id: str, character_id: str) -> None:
        self.redis = redis
        self.queue = keys.event_queue(user_id, character_id)
        self.processing = keys.event_processing(user_id, character_id)
        self.awaiting = keys.event_awaiting(user_id, character_id)

    async def push(self, event: Event) -> None:
        await self.redis.rpush(self.queue, encode(event))

    async def find(self, turn_id: str) -> tuple[str, Event] | None:
        """The first queued event of `turn_id`, wherever it waits in the queue."""
        for raw in await self.redis.lrange(self.queue, 0, -1):
            try:
                event = decode_event(raw)
            except Exception:  # noqa: BLE001 - the front-of-queue path reports broken records
                continue
            if event.turn_id == turn_id:
                return raw, event
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
        return await self.redis.lmove(self.awaiting, self.processing, "LEFT", "RIGHT")

    async def restore(self) -> int:
        """Recovery: put every taken-but-unacknowledged event back at the front, in order."""
        moved = 0
        while await self.redis.lmove(self.processing, self.queue, "RIGHT", "LEFT") is not None:
            moved += 1
        return moved
