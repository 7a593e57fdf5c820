"""The Pixie worker: one background task per process that drains the Pixie queues into
long-term memory (design §3a; seed 000 §2.3: the "Default Mode Network" works between turns).

Lowest priority, by three rules:

1. it looks at a pair only while the pair is idle: no turn running (no `turn_laeuft`
   marker), nothing in its prompt or event queue;
2. it takes the run slot only when a slot is free and no turn waits for one
   (`slots.hold_when_free`), and holds it for exactly one model call — so a turn that
   arrives meanwhile waits at most for that one call, then gets the slot first;
3. SQLite writes and the queue acknowledgement happen after the slot is released.

The worker also writes the `last_used_at` marks of memories a prompt used (`note_used`),
batched, off the turns' path; marks not yet written when the process ends are lost (they
only weigh recency).

Each trigger is taken into the pair's processing list (reliable queue,
`app.memory.pixie_queue`), consolidated (`consolidate`: one model call plus local checks),
written in one transaction (`LongTermMemory.apply`, idempotent per trigger) and only then
acknowledged. A crash in between leaves it in the processing list; recovery puts it back. A
model error (or any other failure) puts the trigger back at the end of the queue with one
more attempt; after `pixie_max_attempts` it is dropped with a warning that names the limit. The worker sleeps
until a trigger is queued in this process (`wake`) or `pixie_poll_seconds` have passed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import msgspec
import redis.asyncio as aioredis

from app.consolidation.consolidate import consolidate
from app.core import log as logctx
from app.core.background import RETRY_AFTER_FAILURE_SECONDS, Ticker
from app.core.log import fields
from app.core.settings import Settings
from app.llm.errors import ModelError
from app.memory import keys
from app.memory.long_term import Applied, LongTermMemory
from app.memory.pixie_queue import PixieQueue, Trigger, decode_trigger
from app.pipeline.context import NodeContext

log = logging.getLogger(__name__)

ContextFor = Callable[[str, str], NodeContext]  # (user, character) → a model-call context


class Slots(Protocol):
    """The runtime's run slots, as the worker uses them (`app.runtime.slots`)."""

    def hold_when_free(self, endpoint: str | None) -> AbstractAsyncContextManager[None]: ...


class PixieWorker:
    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        settings: Settings,
        slots: Slots,
        long_term: LongTermMemory,
        context_for: ContextFor,
        instance_id: str = "",
    ) -> None:
        self.redis = redis
        self.instance_id = instance_id  # noted on every trigger it takes (recovery)
        self.settings = settings
        self.slots = slots
        self.long_term = long_term
        self.context_for = context_for
        self.ticker: Ticker[int] = Ticker(
            "pixie-worker",
            self.tick,
            interval=settings.pixie_poll_seconds,
            error_delay=RETRY_AFTER_FAILURE_SECONDS,
            logger=log,
        )
        self.consolidated = 0
        self._used: dict[str, float] = {}  # memory id → when a prompt last used it
        self.busy = False  # a consolidation is running (tests and the bench look)

    def wake(self) -> None:
        self.ticker.wake()

    def note_used(self, memory_ids: list[str], at: float) -> None:
        """Memories a prompt used: their `last_used_at` is written at the next tick."""
        if not memory_ids:
            return
        # No wake: the marks wait for the next tick (at most `pixie_poll_seconds`), so their
        # disk write does not queue before the running turn's own writes on the one writer.
        for memory_id in memory_ids:
            self._used[memory_id] = max(at, self._used.get(memory_id, 0.0))

    async def flush_used(self) -> int:
        used, self._used = self._used, {}
        try:
            await self.long_term.touch(used)
        except BaseException:
            for memory_id, at in used.items():  # kept for the next tick
                self._used[memory_id] = max(at, self._used.get(memory_id, 0.0))
            raise
        return len(used)

    async def start(self) -> None:
        await self.ticker.start()

    async def stop(self) -> None:
        await self.ticker.stop()
        try:
            await self.flush_used()  # the usage marks noted since the last tick
        except Exception:
            log.exception("last_used_at marks not written at stop")

    async def tick(self) -> int:
        """Consolidate what waits for every idle pair; returns how many triggers were
        handled."""
        await self.flush_used()
        handled = 0
        for pair in sorted(keys.texts(await self.redis.smembers(keys.pixie_pairs()))):
            user_id, character_id = keys.split_pair(pair)
            queue = PixieQueue(self.redis, user_id, character_id, owner=self.instance_id)
            while await self.pair_idle(user_id, character_id):
                raw = await queue.take()
                if raw is None:
                    await queue.forget_pair_if_empty()
                    break
                token = logctx.pair.set(pair)
                try:
                    went_on = await self.process(queue, raw)
                finally:
                    logctx.pair.reset(token)
                handled += 1
                if not went_on:
                    break  # the model failed: this pair waits for the next tick
        return handled

    async def pair_idle(self, user_id: str, character_id: str) -> bool:
        """No turn running and no input waiting for the pair."""
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.exists(keys.turn_marker(user_id, character_id))
            pipe.llen(keys.prompt_queue(user_id, character_id))
            pipe.llen(keys.event_queue(user_id, character_id))
            marker, prompts, events = await pipe.execute()
        return not (marker or prompts or events)

    async def process(self, queue: PixieQueue, raw: str) -> bool:
        """Consolidate one taken trigger; False when that failed (it waits for another
        attempt)."""
        try:
            trigger = decode_trigger(raw)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.error(
                "unreadable promotion trigger dropped",
                extra=fields(queue=queue.queue, error=str(exc), raw=raw[:200]),
            )
            await queue.ack(raw)
            return True
        log.info(
            "promotion trigger taken",
            extra=fields(
                trigger_id=trigger.trigger_id,
                turn_id=trigger.turn_id,
                message_ids=trigger.message_ids,
                importance=trigger.importance,
                attempts=trigger.attempts,
            ),
        )
        started = time.perf_counter()
        try:
            applied = await self._consolidate(trigger)
        except ModelError as exc:
            await self._retry_later(queue, raw, trigger, exc.code)
            return False
        except Exception:
            log.exception("consolidation failed", extra=fields(trigger_id=trigger.trigger_id))
            await self._retry_later(queue, raw, trigger, "internal_error")
            return False
        await queue.ack(raw)
        self.consolidated += 1
        if applied is None:
            log.info(
                "promotion trigger consolidated before (a rerun); nothing changed",
                extra=fields(trigger_id=trigger.trigger_id),
            )
            return True
        log.info(
            "promotion trigger consolidated",
            extra=fields(
                trigger_id=trigger.trigger_id,
                turn_id=trigger.turn_id,
                added=applied.added,
                refreshed=applied.refreshed,
                superseded=applied.superseded,
                ms=round((time.perf_counter() - started) * 1000, 1),
            ),
        )
        return True

    async def _consolidate(self, trigger: Trigger) -> Applied | None:
        """Candidates, the one model call under the run slot, the one write transaction."""
        known = await self.long_term.candidates(
            trigger.user_id,
            trigger.character_id,
            "\n".join([trigger.text, *trigger.segments]),
            self.settings.memory_candidates,
        )
        ctx = self.context_for(trigger.user_id, trigger.character_id)
        # The slots of the model server this call goes to (`Gateway.endpoint`).
        async with self.slots.hold_when_free(ctx.gateway.endpoint):
            self.busy = True
            try:
                changes = await consolidate(ctx, trigger, known)
            finally:
                self.busy = False
        return await self.long_term.apply(
            trigger.trigger_id,
            trigger.user_id,
            trigger.character_id,
            changes,
            trigger.message_ids,
            time.time(),
        )

    async def _retry_later(self, queue: PixieQueue, raw: str, trigger: Trigger, code: str) -> None:
        attempts = trigger.attempts + 1
        limit = self.settings.pixie_max_attempts
        if attempts >= limit:
            log.warning(
                "promotion trigger dropped after failed consolidations",
                extra=fields(
                    trigger_id=trigger.trigger_id,
                    attempts=attempts,
                    limit="pixie_max_attempts",
                    max_attempts=limit,
                    code=code,
                ),
            )
            await queue.ack(raw)
            return
        await queue.requeue(raw, msgspec.structs.replace(trigger, attempts=attempts))
        log.warning(
            "consolidation failed; the trigger waits for another attempt",
            extra=fields(trigger_id=trigger.trigger_id, attempts=attempts, code=code),
        )
