"""The pair consumer: at most one task per pair and process takes the pair's work (design §5).

It is woken by `notify` (an `asyncio.Event`; with an external Redis also by a pub/sub
message) and loops while it makes progress, then ends: an idle pair costs nothing. Each step:

- a waiting **event** goes first (the event consumer): it takes the turn marker (or finds
  its own), moves the event to the processing list and hands the turn to the runner (path 2);
- otherwise, if the **marker is free and no event waits**, the prompt consumer takes the
  marker (`SET NX`), cuts the front block (messages whose gap to their predecessor is within
  `input_window_seconds`), creates the turn (queued) with all the block's message ids and
  hands it to the runner (path 1);
- a turn recovery found half-done before path 1 (`resume`) runs its path 1 again first.

One module: one class, `PairConsumer`, whose steps share its state and its one loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import redis.asyncio as aioredis

from app.core import log as logctx
from app.core.lanes import in_background
from app.core.log import fields
from app.core.settings import Settings
from app.memory import keys
from app.pipeline.vocabulary import AwaitingPayload, Event, EventPayload
from app.runtime.blocks import joins_block
from app.runtime.events import EventQueue, new_id
from app.runtime.markers import PairLocks, parse_marker
from app.runtime.records import Records, TurnRecord
from app.runtime.slots import SlotTimeout
from app.runtime.turns import TurnRunner
from app.runtime.wire import AcceptedMessage, decode_accepted, decode_event
from statemachine import FAILED, QUEUED

log = logging.getLogger("app.runtime.runtime")  # one logger name for the runtime's lines

BLOCK_PAGE = 64  # prompt-queue entries read per round trip while cutting a block
ERROR_BACKOFF_SECONDS = 1.0


class PairConsumer:
    """The per-pair consumer tasks of this process."""

    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        settings: Settings,
        records: Records,
        locks: PairLocks,
        turns: TurnRunner,
    ) -> None:
        self.redis = redis
        self.settings = settings
        self.records = records
        self.locks = locks
        self.turns = turns
        self.resume_path1: dict[str, str] = {}  # pair → turn id whose path 1 must rerun
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._wakes: dict[str, asyncio.Event] = {}
        self._stopping = False

    # --- what recovery and a reset tell it ------------------------------------------------

    def resume(self, pair: str, turn_id: str) -> None:
        """Rerun path 1 of `turn_id` before anything else of the pair (after a crash)."""
        self.resume_path1[pair] = turn_id

    def resuming(self, pair: str) -> str | None:
        return self.resume_path1.get(pair)

    def forget_resume(self, pair: str) -> None:
        self.resume_path1.pop(pair, None)

    # --- life cycle -------------------------------------------------------------------------

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        return list(self._workers.values())

    def stopping(self) -> None:
        self._stopping = True

    def clear(self) -> None:
        self._workers.clear()
        self._wakes.clear()

    def notify(self, pair: str) -> None:
        """Wake the pair's consumer, starting it if it is not running."""
        if self._stopping:
            return
        wake = self._wakes.get(pair)
        if wake is None:
            wake = self._wakes[pair] = asyncio.Event()
            # The background lane (app.core.lanes): a burst of turns holds an accept a slice at most.
            self._workers[pair] = in_background(self._pair_worker(pair, wake), name=f"pair:{pair}")
        wake.set()

    def running(self, pair: str) -> bool:
        """A consumer of this process works on the pair now (or waits for a run slot)."""
        return pair in self._workers

    @property
    def active_pairs(self) -> int:
        return len(self._workers)

    async def _pair_worker(self, pair: str, wake: asyncio.Event) -> None:
        token = logctx.pair.set(pair)
        try:
            while not self._stopping:
                wake.clear()
                try:
                    progressed = await self._step(pair)
                except (aioredis.RedisError, OSError):
                    log.exception("pair consumer step failed; retrying")
                    await asyncio.sleep(ERROR_BACKOFF_SECONDS)
                    continue
                if not progressed and not wake.is_set():
                    break
        finally:
            # No await between the last check and here: a notify() either saw this
            # worker (and set `wake`, checked above) or starts a new one.
            if self._workers.get(pair) is asyncio.current_task():
                del self._workers[pair]
                del self._wakes[pair]
            logctx.pair.reset(token)

    async def _step(self, pair: str) -> bool:
        """One unit of work for the pair; False when there is nothing it can do now.

        Work that runs a pipeline waits for a run slot first and takes the pair's marker only
        once it has one (issue 26): a pair that waits holds nothing, so a process that dies
        leaves markers only of the turns it was running."""
        resume = self.resume_path1.pop(pair, None)
        if resume is not None:
            await self._in_slot(lambda timed_out: self._resume_path1(resume, timed_out))
            return True
        events = EventQueue(self.redis, *keys.split_pair(pair))
        front, taken, marker, queued = await self._look(pair, events)
        if front is not None:
            event = await self._readable_event(pair, events, front)
            if event is None:
                return True  # dropped or parked: no run
            if not self._may_run(pair, event, marker):
                return False  # another turn runs; its end loops back to this queue
        elif marker is not None or taken or not queued:
            return False  # a turn runs (its end loops back here), or nothing waits
        return await self._in_slot(lambda timed_out: self._work(pair, events, timed_out))

    async def _in_slot(self, work: Callable[[SlotTimeout | None], Awaitable[bool]]) -> bool:
        """`work(None)` under a run slot, or `work(timeout)` when none came in time (the
        work then fails its turn with `lock_timeout`)."""
        try:
            async with self.turns.slot():
                return await work(None)
        except SlotTimeout as exc:
            return await work(exc)

    async def _look(self, pair: str, events: EventQueue) -> tuple[str | None, int, str | None, int]:
        """What the pair looks like now, in one round trip: the front event, how many events
        are taken, the marker, how many messages wait."""
        user_id, character_id = keys.split_pair(pair)
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lindex(events.queue, 0)
            pipe.llen(events.processing)
            pipe.get(keys.turn_marker(user_id, character_id))
            pipe.llen(keys.prompt_queue(user_id, character_id))
            front, taken, marker, queued = await pipe.execute()
        return front, taken, marker, queued

    async def _work(self, pair: str, events: EventQueue, timed_out: SlotTimeout | None) -> bool:
        """The step proper, under a run slot (or after waiting for one in vain): the pair is
        looked at again, since the wait may have been long."""
        front, taken, marker, queued = await self._look(pair, events)
        if front is not None:
            return await self._consume_event(pair, events, front, marker, timed_out)
        if marker is not None or taken or not queued:
            return False
        user_id, character_id = keys.split_pair(pair)
        return await self._consume_prompts(pair, user_id, character_id, events, timed_out)

    async def _consume_prompts(
        self,
        pair: str,
        user_id: str,
        character_id: str,
        events: EventQueue,
        timed_out: SlotTimeout | None,
    ) -> bool:
        """The marker was free and no event waited: take the pair and cut the front block.
        Its turn runs path 1 and then its path 2 under the one slot the step holds; without a
        slot in time the block's turn fails with `lock_timeout`."""
        queue_key = keys.prompt_queue(user_id, character_id)
        turn_id = new_id()
        marker = self.locks.marker_for(turn_id)
        if not await self.locks.take(pair, marker):
            return False
        # Under the marker nobody else takes from this queue; look again at what waits.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.llen(events.queue)
            pipe.llen(events.processing)
            pipe.lrange(queue_key, 0, BLOCK_PAGE - 1)
            queued_events, taken, first_page = await pipe.execute()
        if queued_events or taken:
            await self.locks.release(pair, marker)
            return True
        block, consumed = await self._read_front_block(queue_key, first_page)
        if not block:
            if consumed:
                await self.redis.ltrim(queue_key, consumed, -1)
            await self.locks.release(pair, marker)
            return consumed > 0
        record = TurnRecord(
            turn_id=turn_id,
            user_id=user_id,
            character_id=character_id,
            initiator="user",
            message_ids=[m.message_id for m in block],
        )
        await self.records.create(record, also=lambda pipe: pipe.ltrim(queue_key, consumed, -1))
        log.info("block taken", extra=fields(turn_id=turn_id, pair=pair, messages=len(block)))
        await self.turns.publish_state(record)
        if timed_out is not None:
            await self.turns.fail_slot_timeout(record, timed_out, release=marker)
            return True
        await self.turns.run_path1(record, block)
        if self.locks.holding(pair) == marker:  # path 1 went well: its path 2, same slot
            front, _, current, _ = await self._look(pair, events)
            if front is not None:
                await self._consume_event(pair, events, front, current, None)
        return True

    async def _read_front_block(
        self, queue_key: str, page: list[str]
    ) -> tuple[list[AcceptedMessage], int]:
        """Read the queue page by page (the first one given) until the front block ends.

        Returns the block and how many queue entries it spans (an unreadable entry, which
        only corruption makes, is consumed with an error line rather than stopping the pair).
        """
        window = self.settings.input_window_seconds
        block: list[AcceptedMessage] = []
        consumed = 0
        while True:
            for raw in page:
                try:
                    message = decode_accepted(raw)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    log.error("unreadable prompt-queue entry dropped", extra=fields(raw=raw))
                    consumed += 1
                    continue
                if not joins_block(block[-1] if block else None, message, window):
                    return block, consumed
                block.append(message)
                consumed += 1
            if len(page) < BLOCK_PAGE:
                return block, consumed
            page = keys.texts(
                await self.redis.lrange(queue_key, consumed, consumed + BLOCK_PAGE - 1)
            )

    async def _resume_path1(self, turn_id: str, timed_out: SlotTimeout | None) -> bool:
        """Rerun path 1 of a recovered turn (its block was taken before the crash; recovery
        handed this process its marker)."""
        record = await self.records.turn(turn_id)
        if record is None or record.state != QUEUED:
            return True
        if timed_out is not None:
            await self.turns.fail_slot_timeout(
                record, timed_out, release=self.locks.holding(record.pair) or ""
            )
            return True
        block = await self._block_from_records(record)
        await self.turns.run_path1(record, block)
        return True

    async def _block_from_records(self, record: TurnRecord) -> list[AcceptedMessage]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for message_id in record.message_ids:
                pipe.hgetall(keys.message_record(message_id))
            rows = await pipe.execute()
        return [
            AcceptedMessage(
                message_id=row["message_id"],
                user_id=row["user_id"],
                character_id=row["character_id"],
                text=row["text"],
                received_at=float(row["received_at"]),
            )
            for row in rows
            if row
        ]

    async def _readable_event(
        self, pair: str, events: EventQueue, raw: str
    ) -> Event[EventPayload] | None:
        """The front event, if it is one a turn runs; None when it was dropped (unreadable,
        no turn id) or parked (an agent's question waits for the next user message)."""
        try:
            event = decode_event(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.error("unreadable event dropped", extra=fields(pair=pair, raw=raw))
            await events.drop(raw)
            return None
        if event.typ == "awaiting_user":
            replaced = await events.park()
            log.info(
                "agent question parked for the next user message",
                extra=fields(pair=pair, turn_id=event.turn_id, replaced=len(replaced)),
            )
            return None
        if event.turn_id is None:
            log.error("event without turn_id dropped", extra=fields(pair=pair, raw=raw))
            await events.drop(raw)
            return None
        return event

    def _may_run(self, pair: str, event: Event[EventPayload], current: str | None) -> bool:
        """Can this process run the front event's turn (or its own turn's event behind it)
        once it has a slot: the marker is free, or is the one of this event's turn, or this
        process holds it for a turn of its own."""
        return (
            current is None
            or current == self.locks.marker_for(event.turn_id or "")
            or current == self.locks.holding(pair)
        )

    async def _consume_event(
        self,
        pair: str,
        events: EventQueue,
        raw: str,
        current_marker: str | None,
        timed_out: SlotTimeout | None,
    ) -> bool:
        event = await self._readable_event(pair, events, raw)
        if event is None:
            return True
        turn_id = event.turn_id or ""
        marker = self.locks.marker_for(turn_id)
        if not await self._hold_marker(pair, marker, current_marker):
            own = await self._running_turns_event(pair, events, current_marker)
            if own is None:
                return False  # another turn runs; its end loops back to this queue
            (raw, event), marker = own
            turn_id = event.turn_id or ""
        record = await self.records.turn(turn_id)
        if record is None or record.state == FAILED:
            log.warning(
                "event of a missing or failed turn dropped",
                extra=fields(
                    pair=pair,
                    turn_id=turn_id,
                    typ=event.typ,
                    state=record.state if record else None,
                ),
            )
            await events.drop(raw)
            await self.locks.release(pair, marker)
            return True
        parked = await events.take_parked() if event.source == "user" else None
        if not await events.take(raw):  # cannot happen while we hold the marker
            log.error("event vanished under the marker", extra=fields(pair=pair))
            return True
        acks = (parked, raw) if parked is not None else (raw,)
        if timed_out is not None:
            await self.turns.fail_slot_timeout(record, timed_out, acks=acks, release=marker)
            return True
        await self.turns.run_path2(record, event, acks, self._pending_agent(parked), marker)
        return True

    async def _hold_marker(self, pair: str, marker: str, current: str | None) -> bool:
        """Own the pair's marker (`current` is its value as just read) for this event's turn:
        a user event finds the one its block set; a character event (impulse, continue)
        sets it when it is picked up, under the run slot."""
        if current == marker:
            self.locks.keep(pair, marker)
            return True
        if current is not None:
            return False
        return await self.locks.take(pair, marker)

    async def _running_turns_event(
        self, pair: str, events: EventQueue, current: str | None
    ) -> tuple[tuple[str, Event[EventPayload]], str] | None:
        """The event of the turn that holds the pair's marker in this process, if it waits
        behind another event (an impulse queued while that turn ran path 1, say): the marker
        spans both halves of its turn, so that event goes first — else both would wait on
        each other for ever."""
        marker = self.locks.holding(pair)
        if marker is None or current != marker:
            return None
        own = await events.find(parse_marker(marker)[1])
        return (own, marker) if own is not None else None

    def _pending_agent(self, parked_raw: str | None) -> dict[str, Any] | None:
        if parked_raw is None:
            return None
        try:
            parked = decode_event(parked_raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.error("unreadable parked agent question ignored")
            return None
        payload = parked.payload
        return payload.agent_context if isinstance(payload, AwaitingPayload) else None
