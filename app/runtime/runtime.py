"""The turn runtime: accept, the per-pair consumer, turn execution, delivery (SPEC §5).

One `Runtime` per process. Its pieces, in the order a message meets them:

1. `accept` stamps `received_at`, pushes the message on the pair's prompt queue and writes
   its message record in one atomic Redis call, wakes the pair and tells every tab of the user
   (`message_accepted`). No model call, no lock.
2. The pair's **consumer** (`_pair_worker`, at most one task per pair and process) is woken
   by `notify` (an `asyncio.Event`; with an external Redis also by a pub/sub message) and
   loops while it makes progress, then ends: an idle pair costs nothing. Each step:
   - a waiting **event** goes first (the event consumer): it sets the turn marker (or finds
     its own), moves the event to the processing list, runs path 2 under a run slot,
     delivers, and in one atomic transition acknowledges the event, pushes a follow-up
     and releases the marker;
   - otherwise, if the **marker is free and no event waits**, the prompt consumer sets the
     marker (`SET NX`), cuts the front block, creates the turn (queued) with all the block's
     message ids, runs path 1 under a run slot and emits the user event (path1 → path2 in
     the same atomic step).
3. Every transition goes through the lifecycle machine (`statemachine`), is persisted with
   its queue effects (`records.Records.transition`) and pushed as `turn_state`. A turn that
   cannot finish fails with `turn_failed` naming every message id: a model error (its code),
   no run slot within `lock_wait_timeout` (`lock_timeout`), a session reset
   (`session_reset`), a crash beyond `max_turn_attempts` (`crashed`), a defect
   (`internal_error`, `impulse_without_thought`). A late result for a failed turn is logged
   and dropped.

The marker's value is ``{instance_id}:{turn_id}``; the keeper (`app.runtime.keeper`)
refreshes every marker this process holds while its turn runs, and its TTL is the emergency
brake. Recovery at start-up lives in `app.runtime.recovery`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

import msgspec
import redis.asyncio as aioredis

from app import log as logctx
from app.log import fields
from app.memory import keys
from app.memory.commit import GuardFailed, TurnGuard
from app.memory.session import SessionMemory
from app.runtime.blocks import joins_block
from app.runtime.events import (
    EventQueue, awaiting_event, continue_event, impulse_event, new_id, user_event,
)
from app.runtime.hub import Hub
from app.runtime.markers import Markers, marker_value, parse_marker
from app.pipeline.vocabulary import (
    P_AGENT_CONTEXT, P_THOUGHT, AwaitUser, CharacterRun, Continue, Event, Path2Result,
    PipelineContext, Pipelines, TurnRejected, UserBlock,
)
from app.runtime.ratelimit import RateLimiter
from app.runtime.records import Conflict, Records, TurnRecord
from app.runtime.slots import LocalSlots, SlotTimeout
from app.tasks import cancel_and_wait
from app.runtime.wire import (
    AcceptedMessage, CharacterResponse, CharacterStage, MessageAccepted, SessionReset,
    TurnFailed, TurnState, WsMessage, decode_accepted, decode_event, encode,
)
from app.settings import Settings
from statemachine import DELIVERED, FAILED, PATH2, QUEUED, IllegalTransition, TurnLifecycle

log = logging.getLogger(__name__)

BLOCK_PAGE = 64  # prompt-queue entries read per round trip while cutting a block
ERROR_BACKOFF_SECONDS = 1.0
TURN_ENDED = "turn_ended"  # a turn whose marker was gone when it came to write


def _model_error_code(exc: BaseException) -> str | None:
    """The gateway's error code, without importing the gateway here (it may be absent)."""
    code = getattr(exc, "code", None)
    return code if type(exc).__name__ == "ModelError" and isinstance(code, str) else None


class Runtime:
    def __init__(self, *, redis: aioredis.Redis, settings: Settings, hub: Hub,
                 slots: LocalSlots, pipelines: Pipelines, gateway: Callable[[], Any],
                 instance_id: str) -> None:
        self.redis = redis
        self.settings = settings
        self.hub = hub
        self.slots = slots
        self.pipelines = pipelines
        self.gateway = gateway  # looked up per run: the gateway may be swapped at run time
        self.instance_id = instance_id
        self.records = Records(redis, settings.record_ttl, instance_id)
        self.marker_ops = Markers(redis)
        self.rate_limiter = RateLimiter(settings.rate_limit_per_second)
        self.distributed = settings.redis_url is not None
        self.markers: dict[str, str] = {}  # pair → marker value held by this process
        self.resume_path1: dict[str, str] = {}  # pair → turn id whose path 1 must rerun
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._wakes: dict[str, asyncio.Event] = {}
        self._resets: dict[str, asyncio.Event] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False

    # ======================================================================================
    # accept
    # ======================================================================================
    async def accept(self, user_id: str, character_id: str, text: str) -> AcceptedMessage:
        """Queue one validated message; answers in one Redis round trip."""
        pair = keys.pair_id(user_id, character_id)
        reset = self._resets.get(pair)
        if reset is not None:  # a session reset is draining this pair's queue right now
            await reset.wait()
        message = AcceptedMessage(message_id=new_id(), user_id=user_id,
                                  character_id=character_id, text=text,
                                  received_at=time.time())
        await self.records.accept(message, encode(message),
                                  wake=keys.wake_channel() if self.distributed else "")
        self.notify(pair)
        await self.hub.publish(user_id, MessageAccepted(
            character_id=character_id, at=message.received_at, message_id=message.message_id,
            text=message.text, received_at=message.received_at))
        return message

    async def submit_impulse(self, user_id: str, character_id: str, thought: str, *,
                             arousal: Any = None, trigger_turn_id: str | None = None) -> str:
        """An own impulse enters as a character event with a new turn (SPEC §5).

        Raises `ImpulseWithoutThought` for an empty thought. Returns the new turn id.
        """
        event = impulse_event(user_id, character_id, thought, arousal=arousal,
                              trigger_turn_id=trigger_turn_id)
        turn_id = event.turn_id
        assert turn_id is not None
        record = TurnRecord(turn_id=turn_id, user_id=user_id, character_id=character_id,
                            origin="character", message_ids=[])
        pair = keys.pair_id(user_id, character_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            self.records.add_turn(pipe, record)
            pipe.rpush(keys.event_queue(user_id, character_id), encode(event))
            pipe.sadd(keys.known_pairs(), pair)
            if self.distributed:
                pipe.publish(keys.wake_channel(), pair)
            await pipe.execute()
        log.info("impulse queued", extra=fields(turn_id=turn_id, pair=pair))
        await self._publish_state(record)
        self.notify(pair)
        return turn_id

    # ======================================================================================
    # the per-pair consumer
    # ======================================================================================
    def notify(self, pair: str) -> None:
        """Wake the pair's consumer, starting it if it is not running."""
        if self._stopping:
            return
        wake = self._wakes.get(pair)
        if wake is None:
            wake = self._wakes[pair] = asyncio.Event()
            self._workers[pair] = asyncio.create_task(self._pair_worker(pair, wake),
                                                      name=f"pair:{pair}")
        wake.set()

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
        """One unit of work for the pair; False when there is nothing it can do now."""
        user_id, character_id = keys.split_pair(pair)
        resume = self.resume_path1.pop(pair, None)
        if resume is not None:
            await self._resume_path1(resume)
            return True
        events = EventQueue(self.redis, user_id, character_id)
        # What the pair looks like now, in one round trip.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.lindex(events.queue, 0)
            pipe.llen(events.processing)
            pipe.get(keys.turn_marker(user_id, character_id))
            pipe.llen(keys.prompt_queue(user_id, character_id))
            front, taken, marker, queued = await pipe.execute()
        if front is not None:
            return await self._consume_event(pair, events, front, marker)
        if marker is not None or taken or not queued:
            return False  # a turn runs (its end loops back here), or nothing waits
        return await self._consume_prompts(pair, user_id, character_id, events)

    # --- prompt consumer --------------------------------------------------------------------
    async def _consume_prompts(self, pair: str, user_id: str, character_id: str,
                               events: EventQueue) -> bool:
        """The marker was free and no event waited: take the pair and cut the front block."""
        marker_key = keys.turn_marker(user_id, character_id)
        queue_key = keys.prompt_queue(user_id, character_id)
        turn_id = new_id()
        marker = marker_value(self.instance_id, turn_id)
        if not await self.redis.set(marker_key, marker, nx=True,
                                    ex=self.settings.turn_marker_ttl):
            return False
        self.markers[pair] = marker
        # Under the marker nobody else takes from this queue; look again at what waits.
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.llen(events.queue)
            pipe.llen(events.processing)
            pipe.lrange(queue_key, 0, BLOCK_PAGE - 1)
            queued_events, taken, first_page = await pipe.execute()
        if queued_events or taken:
            await self._release_marker(pair, marker)
            return True
        block, consumed = await self._read_front_block(queue_key, first_page)
        if not block:
            if consumed:
                await self.redis.ltrim(queue_key, consumed, -1)
            await self._release_marker(pair, marker)
            return consumed > 0
        record = TurnRecord(turn_id=turn_id, user_id=user_id, character_id=character_id,
                            origin="user", message_ids=[m.message_id for m in block])
        async with self.redis.pipeline(transaction=True) as pipe:
            self.records.add_turn(pipe, record)
            pipe.ltrim(queue_key, consumed, -1)
            await pipe.execute()
        log.info("block taken", extra=fields(turn_id=turn_id, pair=pair, messages=len(block)))
        await self._publish_state(record)
        await self._run_path1(record, block)
        return True

    async def _read_front_block(self, queue_key: str, page: list[str]
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
            page = await self.redis.lrange(queue_key, consumed, consumed + BLOCK_PAGE - 1)

    async def _resume_path1(self, turn_id: str) -> None:
        """Rerun path 1 of a recovered turn (its block was taken before the crash)."""
        record = await self.records.turn(turn_id)
        if record is None or record.state != QUEUED:
            return
        block = await self._block_from_records(record)
        await self._run_path1(record, block)

    async def _block_from_records(self, record: TurnRecord) -> list[AcceptedMessage]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for message_id in record.message_ids:
                pipe.hgetall(keys.message_record(message_id))
            rows = await pipe.execute()
        return [AcceptedMessage(message_id=row["message_id"], user_id=row["user_id"],
                                character_id=row["character_id"], text=row["text"],
                                received_at=float(row["received_at"]))
                for row in rows if row]

    async def _run_path1(self, record: TurnRecord, block: list[AcceptedMessage]) -> None:
        token = logctx.turn_id.set(record.turn_id)
        machine = record.machine(self.settings.max_turn_attempts)
        marker = self.markers.get(record.pair, "")
        try:
            async with self.slots.hold():
                await self._fire(record, machine, "perceive")
                user_block = UserBlock(
                    turn_id=record.turn_id, user_id=record.user_id,
                    character_id=record.character_id,
                    message_ids=tuple(m.message_id for m in block),
                    texts=tuple(m.text for m in block),
                    received_at=tuple(m.received_at for m in block),
                    attempt=record.attempts)
                result = await self.pipelines.path1(self._context(record, marker),
                                                    user_block)
                event = user_event(record.user_id, record.character_id, record.turn_id,
                                   list(user_block.message_ids), user_block.text,
                                   result.event_payload)
                await self._fire(record, machine, "respond", push=encode(event))
        except SlotTimeout as exc:
            self._warn_slot_timeout(record, exc)
            await self._fail(record, machine, "lock_timeout", release=marker)
        except (Conflict, IllegalTransition) as exc:
            await self._drop_late(record, exc, release=marker)
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with a notice
            await self._fail(record, machine, self._reason(exc), release=marker)
        finally:
            logctx.turn_id.reset(token)

    # --- event consumer ---------------------------------------------------------------------
    async def _consume_event(self, pair: str, events: EventQueue, raw: str,
                             current_marker: str | None) -> bool:
        try:
            event = decode_event(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            log.error("unreadable event dropped", extra=fields(pair=pair, raw=raw))
            await events.drop(raw)
            return True
        if event.typ == "awaiting_user":
            replaced = await events.park()
            log.info("agent question parked for the next user message",
                     extra=fields(pair=pair, turn_id=event.turn_id, replaced=len(replaced)))
            return True
        turn_id = event.turn_id
        if turn_id is None:
            log.error("event without turn_id dropped", extra=fields(pair=pair, raw=raw))
            await events.drop(raw)
            return True
        marker = marker_value(self.instance_id, turn_id)
        if not await self._hold_marker(pair, marker, current_marker):
            own = await self._running_turns_event(pair, events, current_marker)
            if own is None:
                return False  # another turn runs; its end loops back to this queue
            (raw, event), marker = own
            turn_id = event.turn_id or ""
        record = await self.records.turn(turn_id)
        if record is None or record.state == FAILED:
            log.warning("event of a missing or failed turn dropped",
                        extra=fields(pair=pair, turn_id=turn_id, typ=event.typ,
                                     state=record.state if record else None))
            await events.drop(raw)
            await self._release_marker(pair, marker)
            return True
        parked = await events.take_parked() if event.source == "user" else None
        if not await events.take(raw):  # cannot happen while we hold the marker
            log.error("event vanished under the marker", extra=fields(pair=pair))
            return True
        acks = (parked, raw) if parked is not None else (raw,)
        await self._run_path2(record, event, acks, self._pending_agent(parked), marker)
        return True

    async def _hold_marker(self, pair: str, marker: str, current: str | None) -> bool:
        """Own the pair's marker (`current` is its value as just read) for this event's turn:
        a user event finds the one its block set; a character event (impulse, continue)
        sets it when it is picked up."""
        if current == marker:
            self.markers[pair] = marker
            return True
        if current is not None:
            return False
        user_id, character_id = keys.split_pair(pair)
        if not await self.redis.set(keys.turn_marker(user_id, character_id), marker, nx=True,
                                    ex=self.settings.turn_marker_ttl):
            return False
        self.markers[pair] = marker
        return True

    async def _running_turns_event(self, pair: str, events: EventQueue, current: str | None
                                   ) -> tuple[tuple[str, Event], str] | None:
        """The event of the turn that holds the pair's marker in this process, if it waits
        behind another event (an impulse queued while that turn ran path 1, say): the marker
        spans both halves of its turn, so that event goes first — else both would wait on
        each other for ever."""
        marker = self.markers.get(pair)
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
        context = parked.payload.get(P_AGENT_CONTEXT)
        return context if isinstance(context, dict) else None

    async def _run_path2(self, record: TurnRecord, event: Event, acks: tuple[str, ...],
                         pending_agent: dict[str, Any] | None, marker: str) -> None:
        token = logctx.turn_id.set(record.turn_id)
        machine = record.machine(self.settings.max_turn_attempts)
        try:
            if record.state == DELIVERED:
                await self._fire(record, machine, "follow_up")
            elif record.state != PATH2:
                await self._fire(record, machine, "respond")
            if event.is_impulse and not str(event.payload.get(P_THOUGHT) or "").strip():
                log.error("impulse without a thought: a defect",
                          extra=fields(pair=record.pair, event_id=event.event_id))
                await self._fail(record, machine, "impulse_without_thought", acks=acks,
                                 release=marker)
                return
            run = CharacterRun(turn_id=record.turn_id, user_id=record.user_id,
                               character_id=record.character_id, event=event,
                               message_ids=tuple(record.message_ids), origin=event.origin,
                               pending_agent=pending_agent, attempt=record.attempts)
            async with self.slots.hold():
                result = await self.pipelines.path2(self._context(record, marker), run)
            await self._deliver(record, machine, run, result, acks, marker)
        except SlotTimeout as exc:
            self._warn_slot_timeout(record, exc)
            await self._fail(record, machine, "lock_timeout", acks=acks, release=marker)
        except (Conflict, IllegalTransition) as exc:
            await self._drop_late(record, exc, acks=acks, release=marker)
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with a notice
            await self._fail(record, machine, self._reason(exc), acks=acks, release=marker)
        finally:
            logctx.turn_id.reset(token)

    async def _deliver(self, record: TurnRecord, machine: TurnLifecycle, run: CharacterRun,
                       result: Path2Result, acks: tuple[str, ...], marker: str) -> None:
        follow = self._follow_up(run.event, result, record.pair)
        continuing = follow is not None and follow.typ == "continue"
        at = await self.records.transition(
            record, machine, "deliver", push=encode(follow) if follow is not None else None,
            ack=acks, release_marker="" if continuing else marker)
        if not continuing:
            self.markers.pop(record.pair, None)
        log.info("turn delivered", extra=fields(
            turn_id=record.turn_id, pair=record.pair, origin=result.origin,
            follow_up=follow.typ if follow is not None else None))
        await self.hub.publish(record.user_id, CharacterResponse(
            character_id=record.character_id, at=at, turn_id=record.turn_id,
            message_ids=list(record.message_ids), text=result.text, origin=result.origin,
            emotion=result.emotion, arousal=result.arousal))
        await self._publish_state(record, at)
        self._spawn(self._after_delivery(record, run, result), f"after:{record.turn_id}")

    def _follow_up(self, event: Event, result: Path2Result, pair: str) -> Event | None:
        """The follow-up event a run asked for, within the self-trigger cap."""
        follow = result.follow_up
        # Seed 001 §7.1: log every arrival of the field, present or not, so that a dead
        # channel is distinguishable from "no follow-up needed".
        log.info("self-trigger field", extra=fields(
            pair=pair, present=follow is not None,
            value=type(follow).__name__ if follow is not None else None,
            trigger_count=event.trigger_count))
        if isinstance(follow, Continue):
            limit = self.settings.max_self_triggers
            if event.trigger_count >= limit:
                log.warning("self-trigger dropped at the limit", extra=fields(
                    trigger_count=event.trigger_count + 1, limit=limit, pair=pair,
                    setting="max_self_triggers"))
                return None
            return continue_event(event, follow.payload)
        if isinstance(follow, AwaitUser):
            return awaiting_event(event, follow.agent_context)
        return None

    async def _after_delivery(self, record: TurnRecord, run: CharacterRun,
                              result: Path2Result) -> None:
        try:
            await self.pipelines.after_delivery(self._context(record), run, result)
        except Exception:  # noqa: BLE001 - e.g. the summary check; never the turn's failure
            log.exception("after-delivery step failed",
                          extra=fields(turn_id=record.turn_id, pair=record.pair))

    # ======================================================================================
    # transitions, failure, notices
    # ======================================================================================
    async def _fire(self, record: TurnRecord, machine: TurnLifecycle, trigger: str, *,
                    push: bytes | None = None) -> None:
        at = await self.records.transition(record, machine, trigger, push=push)
        await self._publish_state(record, at)

    async def _fail(self, record: TurnRecord, machine: TurnLifecycle, reason: str, *,
                    acks: tuple[str, ...] = (), release: str = "") -> None:
        """End the turn with a notice naming every message id."""
        try:
            at = await self.records.transition(record, machine, "fail", reason=reason,
                                               ack=acks, release_marker=release)
        except (Conflict, IllegalTransition) as exc:
            await self._drop_late(record, exc, acks=acks, release=release)
            return
        self.markers.pop(record.pair, None)
        await self._announce_failure(record, at, reason)

    async def fail_turn(self, record: TurnRecord, reason: str) -> bool:
        """Fail an open turn from outside its run (reset, recovery). False if it had ended."""
        machine = record.machine(self.settings.max_turn_attempts)
        try:
            at = await self.records.transition(record, machine, "fail", reason=reason)
        except (Conflict, IllegalTransition):
            return False
        await self._announce_failure(record, at, reason)
        return True

    async def _announce_failure(self, record: TurnRecord, at: float, reason: str) -> None:
        """Log the failure and tell every tab: the new state, then the notice naming every id."""
        log.warning("turn failed", extra=fields(turn_id=record.turn_id, pair=record.pair,
                                                reason=reason, message_ids=record.message_ids))
        await self._publish_state(record, at)
        await self.hub.publish(record.user_id, TurnFailed(
            character_id=record.character_id, at=at, turn_id=record.turn_id,
            message_ids=list(record.message_ids), reason=reason))

    async def _drop_late(self, record: TurnRecord, exc: Exception, *,
                         acks: tuple[str, ...] = (), release: str = "") -> None:
        """The turn ended elsewhere (failed by a reset or recovery): drop our result, but
        still acknowledge what we took and give back the marker if it is ours."""
        stored = await self.records.turn(record.turn_id)
        log.warning("late result for an ended turn dropped", extra=fields(
            turn_id=record.turn_id, pair=record.pair, error=str(exc),
            state=stored.state if stored else None))
        user_id, character_id = record.user_id, record.character_id
        async with self.redis.pipeline(transaction=True) as pipe:
            for raw in acks:
                pipe.lrem(keys.event_processing(user_id, character_id), 1, raw)
            await pipe.execute()
        if release:
            await self._release_marker(record.pair, release)

    async def _release_marker(self, pair: str, marker: str) -> None:
        user_id, character_id = keys.split_pair(pair)
        await self.marker_ops.release(keys.turn_marker(user_id, character_id), marker)
        if self.markers.get(pair) == marker:
            del self.markers[pair]

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, GuardFailed):
            # Ended by a reset or a recovery (then `_fail` finds it failed and drops the
            # result), or its marker expired: the turn wrote nothing and ends here.
            log.warning("turn ended before its writes landed; nothing written",
                        extra=fields(error=str(exc)))
            return TURN_ENDED
        if isinstance(exc, TurnRejected):
            log.warning("turn rejected by its pipeline", extra=fields(reason=exc.reason,
                                                                      error=str(exc)))
            return exc.reason
        code = _model_error_code(exc)
        if code is not None:
            log.warning("model call failed", extra=fields(code=code, error=str(exc)))
            return code
        log.error("turn run crashed", exc_info=exc)
        return "internal_error"

    def _warn_slot_timeout(self, record: TurnRecord, exc: SlotTimeout) -> None:
        log.warning("no run slot free in time", extra=fields(
            turn_id=record.turn_id, pair=record.pair, waited_s=round(exc.waited, 3),
            limit=self.settings.lock_wait_timeout, setting="lock_wait_timeout"))

    async def _publish_state(self, record: TurnRecord, at: float | None = None) -> None:
        await self.hub.publish(record.user_id, TurnState(
            character_id=record.character_id, at=at or time.time(), turn_id=record.turn_id,
            state=record.state, message_ids=list(record.message_ids)))

    def _context(self, record: TurnRecord, marker: str | None = None) -> PipelineContext:
        """What a pipeline run gets; `marker`: the pair's marker the running turn holds (its
        commit is guarded by it), None after the turn (after-delivery steps write no turn)."""
        async def stage(name: str) -> None:
            await self.hub.publish(record.user_id, CharacterStage(
                character_id=record.character_id, at=time.time(), turn_id=record.turn_id,
                stage=name))

        guard = None if marker is None else TurnGuard(
            record_key=keys.turn_record(record.turn_id),
            marker_key=keys.turn_marker(record.user_id, record.character_id),
            marker=marker, ended_states=(FAILED,))
        return PipelineContext(settings=self.settings, redis=self.redis, gateway=self.gateway(),
                               stage=stage, guard=guard)

    # ======================================================================================
    # reads for the API and the WebSocket
    # ======================================================================================
    async def snapshot(self, user_id: str) -> list[WsMessage]:
        """What a (re)connecting tab needs: its queued messages and the state of its open
        turns, oldest first."""
        turn_ids = sorted(await self.redis.smembers(keys.user_open_turns(user_id)))
        records = sorted(await self.records.turns(turn_ids), key=lambda r: r.created_at)
        stale = [r.turn_id for r in records if r.terminal]
        if stale:
            await self.redis.srem(keys.user_open_turns(user_id), *stale)
        messages: list[WsMessage] = []
        for pair in sorted(await self.redis.smembers(keys.known_pairs())):
            owner, character_id = keys.split_pair(pair)
            if owner != user_id:
                continue
            for raw in await self.redis.lrange(keys.prompt_queue(user_id, character_id), 0, -1):
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    m = decode_accepted(raw)
                    messages.append(MessageAccepted(
                        character_id=character_id, at=m.received_at, message_id=m.message_id,
                        text=m.text, received_at=m.received_at))
        messages.extend(TurnState(character_id=r.character_id, at=r.updated_at,
                                  turn_id=r.turn_id, state=r.state,
                                  message_ids=list(r.message_ids))
                        for r in records if not r.terminal)
        return messages

    # ======================================================================================
    # session reset
    # ======================================================================================
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
            report = await SessionMemory(self.redis, self.settings).reset(user_id, character_id)
            self.markers.pop(pair, None)
            self.resume_path1.pop(pair, None)
            open_ids = sorted(await self.redis.smembers(keys.user_open_turns(user_id)))
            for record in await self.records.turns(open_ids):
                if record.character_id == character_id and not record.terminal:
                    await self.fail_turn(record, "session_reset")
            queued = []
            for raw in report.prompt_entries:
                with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError):
                    queued.append(decode_accepted(raw))
            if queued:
                # Never taken by a turn: give them one, failed, so each id gets its notice.
                record = TurnRecord(turn_id=new_id(), user_id=user_id,
                                    character_id=character_id, origin="user",
                                    message_ids=[m.message_id for m in queued])
                async with self.redis.pipeline(transaction=True) as pipe:
                    self.records.add_turn(pipe, record)
                    await pipe.execute()
                await self.fail_turn(record, "session_reset")
            await self.hub.publish(user_id, SessionReset(character_id=character_id,
                                                         at=time.time()))
        finally:
            done.set()
            if self._resets.get(pair) is done:
                del self._resets[pair]

    # ======================================================================================
    # life cycle
    # ======================================================================================
    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def idle(self) -> None:
        """Wait until no pair consumer and no after-delivery step is running (tests, bench)."""
        while self._workers or self._background:
            await asyncio.gather(*self._workers.values(), *self._background,
                                 return_exceptions=True)

    async def stop(self) -> None:
        """Stop consuming. Running turns are cancelled where they stand; the next start's
        recovery retries or fails them (their records and events are all in Redis)."""
        self._stopping = True
        await cancel_and_wait([*self._workers.values(), *self._background])
        self._workers.clear()
        self._wakes.clear()
