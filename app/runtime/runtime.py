"""The turn runtime's front: accept, impulses, the reconnect snapshot, reset (design §5).

One `Runtime` per process, built from its rooms:

- `app.runtime.records.Records` and `app.runtime.markers.PairLocks` — the lifecycle records
  and the pair lock (the turn markers this process sets, holds, refreshes and releases),
  built by the wiring and handed in, since the API reads the records and the keeper
  refreshes the markers;
- `app.runtime.consumer.PairConsumer` — the per-pair consumer: worker loop, block cutting,
  event taking;
- `app.runtime.turns.TurnRunner` — path 1, path 2, delivery and failure of one turn;
- `app.runtime.recovery.Recovery` — start-up recovery over these rooms (`recover`);
- this module — what the API and the reminder clock call:
  `accept` stamps `received_at`, pushes the message on the pair's prompt queue, writes
  its message record and (external Redis) publishes the wake and the `message_accepted`
  for every tab of the user in one atomic Redis call on a connection of its own (never
  behind the orchestration's calls), with no model call and no lock; `submit_impulse` queues an own
  impulse; `snapshot` is what a (re)connecting tab needs; `reset_pair` resets a session.

The marker's value is ``{instance_id}:{turn_id}``; the keeper (`app.runtime.keeper`)
refreshes every marker this process holds while its turn runs, and its TTL is the emergency
brake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import msgspec
import redis.asyncio as aioredis

from app.core.background import cancel_and_wait
from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys
from app.memory.session import SessionMemory
from app.pipeline.vocabulary import Pipelines
from app.runtime.consumer import PairConsumer
from app.runtime.events import impulse_event, new_id
from app.runtime.hub import Hub
from app.runtime.markers import PairLocks
from app.runtime.ratelimit import RateLimiter
from app.runtime.records import Records, TurnRecord
from app.runtime.recovery import Recovery, RecoveryReport
from app.runtime.slots import LocalSlots
from app.runtime.turns import TurnRunner
from app.runtime.wire import (
    AcceptedMessage,
    MessageAccepted,
    SessionReset,
    TurnState,
    WsMessage,
    decode_accepted,
    encode,
)

log = logging.getLogger(__name__)


class Runtime:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        settings: Settings,
        memory: SessionMemory,
        hub: Hub,
        slots: LocalSlots,
        records: Records,
        locks: PairLocks,
        pipelines: Pipelines,
        gateway: Callable[[], Any],
        instance_id: str,
    ) -> None:
        self.redis = redis
        self.settings = settings
        self.memory = memory  # the pairs' sessions (the app's one store)
        self.hub = hub
        self.slots = slots
        self.instance_id = instance_id
        self.records = records
        self.locks = locks
        self.turns = TurnRunner(
            redis=redis,
            settings=settings,
            memory=memory,
            hub=hub,
            slots=slots,
            pipelines=pipelines,
            gateway=gateway,
            records=self.records,
            locks=self.locks,
        )
        self.consumer = PairConsumer(
            redis=redis, settings=settings, records=self.records, locks=self.locks, turns=self.turns
        )
        self.recovery = Recovery(
            redis=redis,
            settings=settings,
            instance_id=instance_id,
            records=records,
            locks=locks,
            consumer=self.consumer,
            fail_turn=self.turns.fail_turn,
            finish_writes=pipelines.finish_writes,
        )
        self.rate_limiter = RateLimiter(settings.rate_limit_per_second)
        self.distributed = settings.redis_url is not None
        self._resets: dict[str, asyncio.Event] = {}

    # --- accept -----------------------------------------------------------------------------

    async def accept(self, user_id: str, character_id: str, text: str) -> AcceptedMessage:
        """Queue one validated message; answers in one Redis round trip."""
        pair = keys.pair_id(user_id, character_id)
        reset = self._resets.get(pair)
        if reset is not None:  # a session reset is draining this pair's queue right now
            await reset.wait()
        message = AcceptedMessage(
            message_id=new_id(),
            user_id=user_id,
            character_id=character_id,
            text=text,
            received_at=time.time(),
        )
        accepted = MessageAccepted(
            character_id=character_id,
            at=message.received_at,
            message_id=message.message_id,
            text=message.text,
            received_at=message.received_at,
        )
        # With an external Redis the tabs of every process hear of it in the same call.
        shared = self.hub.envelope(user_id, accepted)
        await self.records.accept(
            message,
            encode(message),
            wake=keys.wake_channel() if self.distributed else "",
            announce=shared,
        )
        self.notify(pair)
        if shared is None:
            self.hub.fan_out(user_id, encode(accepted).decode())
        return message

    async def submit_impulse(
        self,
        user_id: str,
        character_id: str,
        thought: str,
        *,
        arousal: Any = None,
        trigger_turn_id: str | None = None,
    ) -> str:
        """An own impulse enters as a character event with a new turn (design §5).

        Raises `ImpulseWithoutThought` for an empty thought. Returns the new turn id.
        """
        event = impulse_event(
            user_id, character_id, thought, arousal=arousal, trigger_turn_id=trigger_turn_id
        )
        turn_id = event.turn_id
        assert turn_id is not None
        record = TurnRecord(
            turn_id=turn_id,
            user_id=user_id,
            character_id=character_id,
            initiator="character",
            message_ids=[],
        )
        pair = keys.pair_id(user_id, character_id)

        def queue_event(pipe: Any) -> None:
            pipe.rpush(keys.event_queue(user_id, character_id), encode(event))
            pipe.sadd(keys.known_pairs(), pair)
            pipe.sadd(keys.user_pairs(user_id), character_id)
            if self.distributed:
                pipe.publish(keys.wake_channel(), pair)

        await self.records.create(record, also=queue_event)
        log.info("impulse queued", extra=fields(turn_id=turn_id, pair=pair))
        await self.turns.publish_state(record)
        self.notify(pair)
        return turn_id

    def notify(self, pair: str) -> None:
        """Wake the pair's consumer, starting it if it is not running."""
        self.consumer.notify(pair)

    @property
    def active_pairs(self) -> int:
        return self.consumer.active_pairs

    async def recover(self, *, only_dead_owners: bool) -> RecoveryReport:
        """Close or retry what a dead process left (at start-up; with an external Redis also
        the keeper's orphan sweep, `only_dead_owners`)."""
        return await self.recovery.run(only_dead_owners=only_dead_owners)

    # --- reads for the API and the WebSocket ------------------------------------------------

    async def snapshot(self, user_id: str) -> list[WsMessage]:
        """What a (re)connecting tab needs: its queued messages and the state of its open
        turns, oldest first."""
        turn_ids = sorted(keys.texts(await self.redis.smembers(keys.user_open_turns(user_id))))
        records = sorted(await self.records.turns(turn_ids), key=lambda r: r.created_at)
        stale = [r.turn_id for r in records if r.terminal]
        if stale:
            await self.redis.srem(keys.user_open_turns(user_id), *stale)
        messages: list[WsMessage] = []
        characters = sorted(keys.texts(await self.redis.smembers(keys.user_pairs(user_id))))
        async with self.redis.pipeline(transaction=False) as pipe:
            for character_id in characters:
                pipe.lrange(keys.prompt_queue(user_id, character_id), 0, -1)
            queues = await pipe.execute()
        for character_id, queued in zip(characters, queues, strict=True):
            for raw in queued:
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    m = decode_accepted(raw)
                    messages.append(
                        MessageAccepted(
                            character_id=character_id,
                            at=m.received_at,
                            message_id=m.message_id,
                            text=m.text,
                            received_at=m.received_at,
                        )
                    )
        messages.extend(
            TurnState(
                character_id=r.character_id,
                at=r.updated_at,
                turn_id=r.turn_id,
                state=r.state,
                message_ids=list(r.message_ids),
            )
            for r in records
            if not r.terminal
        )
        return messages

    # --- session reset ----------------------------------------------------------------------

    async def reset_pair(self, user_id: str, character_id: str) -> None:
        """Reset the pair's session (turns, summary, queues, parked agent question, marker),
        failing every open turn and every queued message with `session_reset`, so nothing
        accepted is left without a notice, then tell every tab (`session_reset`). New
        messages for the pair wait until the reset is done; a second reset of the pair waits
        for the first and then runs on its own."""
        pair = keys.pair_id(user_id, character_id)
        while (running := self._resets.get(pair)) is not None:
            await running.wait()
        done = self._resets[pair] = asyncio.Event()
        try:
            report = await self.memory.reset(user_id, character_id)
            self.locks.forget(pair)
            self.consumer.forget_resume(pair)
            open_ids = sorted(keys.texts(await self.redis.smembers(keys.user_open_turns(user_id))))
            for record in await self.records.turns(open_ids):
                if record.character_id == character_id and not record.terminal:
                    await self.turns.fail_turn(record, "session_reset")
            queued = []
            for raw in report.prompt_entries:
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    queued.append(decode_accepted(raw))
            if queued:
                # Never taken by a turn: give them one, failed, so each id gets its notice.
                record = TurnRecord(
                    turn_id=new_id(),
                    user_id=user_id,
                    character_id=character_id,
                    initiator="user",
                    message_ids=[m.message_id for m in queued],
                )
                await self.records.create(record)
                await self.turns.fail_turn(record, "session_reset")
            await self.hub.publish(user_id, SessionReset(character_id=character_id, at=time.time()))
        finally:
            done.set()
            if self._resets.get(pair) is done:
                del self._resets[pair]

    # --- life cycle -------------------------------------------------------------------------

    async def idle(self) -> None:
        """Wait until no pair consumer and no after-delivery step is running (tests, bench)."""
        while self.consumer.tasks or self.turns.background:
            await asyncio.gather(
                *self.consumer.tasks, *self.turns.background, return_exceptions=True
            )

    async def stop(self) -> None:
        """Stop consuming. Running turns are cancelled where they stand; the next start's
        recovery retries or fails them (their records and events are all in Redis)."""
        self.consumer.stopping()
        await cancel_and_wait([*self.consumer.tasks, *self.turns.background])
        self.consumer.clear()
        await self.records.aclose()
