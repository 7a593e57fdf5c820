"""The turn runner: path 1, path 2, delivery and failure of one turn (design §5).

Every transition goes through the lifecycle machine (`statemachine`), is persisted with its
queue effects (`records.Records.transition`) and pushed as `turn_state`. A turn that cannot
finish fails with `turn_failed` naming every message id: a model error (its code), no run
slot within `lock_wait_timeout` (`lock_timeout`), a session reset (`session_reset`), a crash
beyond `max_turn_attempts` (`crashed`), a defect (`internal_error`,
`impulse_without_thought`), a turn whose marker was gone when it came to write
(`turn_ended`). A late result for an ended turn is logged and dropped; so is one of a run
that recovery took over (its process was declared dead while it ran: the turn's attempts
moved on), which leaves the turn's events to the recovery and the rerun.

A pipeline run gets a `PipelineContext` whose guard (`app.memory.commit.TurnGuard`) names
the turn's record and the pair marker it holds: its writes land only while both still hold.

One module: one class, `TurnRunner`, whose paths share the turn's transitions and failures.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any

import redis.asyncio as aioredis

from app.core import log as logctx
from app.core.log import fields
from app.core.settings import Settings
from app.llm.errors import ModelError
from app.memory import keys
from app.memory.commit import GuardFailed, TurnGuard
from app.memory.session import SessionMemory
from app.pipeline.vocabulary import (
    AwaitUser,
    CharacterRun,
    Continue,
    Event,
    EventPayload,
    ImpulsePayload,
    Path2Result,
    PipelineContext,
    Pipelines,
    TurnRejected,
    UserBlock,
)
from app.runtime.events import awaiting_event, continue_event, user_event
from app.runtime.hub import Hub
from app.runtime.markers import PairLocks
from app.runtime.records import Records, StateMoved, TurnRecord
from app.runtime.slots import LocalSlots, SlotTimeout
from app.runtime.wire import (
    AcceptedMessage,
    CharacterResponse,
    CharacterStage,
    TurnFailed,
    TurnState,
    encode,
)
from statemachine import DELIVERED, FAILED, PATH2, IllegalTransition, TurnLifecycle

log = logging.getLogger("app.runtime.runtime")  # one logger name for the runtime's lines

TURN_ENDED = "turn_ended"  # a turn whose marker was gone when it came to write


def _model_error_code(exc: BaseException) -> str | None:
    """The model gateway's error code, for a `ModelError`."""
    return exc.code if isinstance(exc, ModelError) else None


class TurnRunner:
    """Runs one turn's half and ends it: delivered, or failed with a notice. The caller (the
    consumer) holds the run slot (`slot`) around it."""

    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        settings: Settings,
        memory: SessionMemory,
        hub: Hub,
        slots: LocalSlots,
        pipelines: Pipelines,
        gateway: Callable[[], Any],
        records: Records,
        locks: PairLocks,
    ) -> None:
        self.redis = redis
        self.settings = settings
        self.memory = memory
        self.hub = hub
        self.slots = slots
        self.pipelines = pipelines
        self.gateway = gateway  # looked up per run: the gateway may be swapped at run time
        self.records = records
        self.locks = locks
        self.background: set[asyncio.Task[Any]] = set()

    async def run_path1(self, record: TurnRecord, block: list[AcceptedMessage]) -> None:
        token = logctx.turn_id.set(record.turn_id)
        machine = record.machine(self.settings.max_turn_attempts)
        marker = self.locks.holding(record.pair) or ""
        try:
            await self._fire(record, machine, "perceive")
            user_block = UserBlock(
                turn_id=record.turn_id,
                user_id=record.user_id,
                character_id=record.character_id,
                message_ids=tuple(m.message_id for m in block),
                texts=tuple(m.text for m in block),
                received_at=tuple(m.received_at for m in block),
                attempt=record.attempts,
            )
            result = await self.pipelines.path1(self.context(record, marker), user_block)
            event = user_event(
                record.user_id,
                record.character_id,
                record.turn_id,
                list(user_block.message_ids),
                user_block.text,
                result.perceived,
                result.language,
            )
            await self._fire(record, machine, "respond", push=encode(event))
        except (StateMoved, IllegalTransition) as exc:
            await self._drop_late(record, exc, release=marker)
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with a notice
            await self._fail(record, machine, self._reason(exc), release=marker)
        finally:
            logctx.turn_id.reset(token)

    async def run_path2(
        self,
        record: TurnRecord,
        event: Event[EventPayload],
        acks: tuple[str, ...],
        pending_agent: dict[str, Any] | None,
        marker: str,
    ) -> None:
        token = logctx.turn_id.set(record.turn_id)
        machine = record.machine(self.settings.max_turn_attempts)
        try:
            if record.state == DELIVERED:
                await self._fire(record, machine, "follow_up")
            elif record.state != PATH2:
                await self._fire(record, machine, "respond")
            if isinstance(event.payload, ImpulsePayload) and not event.payload.thought.strip():
                log.error(
                    "impulse without a thought: a defect",
                    extra=fields(pair=record.pair, event_id=event.event_id),
                )
                await self._fail(
                    record, machine, "impulse_without_thought", acks=acks, release=marker
                )
                return
            run = CharacterRun(
                turn_id=record.turn_id,
                user_id=record.user_id,
                character_id=record.character_id,
                event=event,
                message_ids=tuple(record.message_ids),
                origin=event.origin,
                pending_agent=pending_agent,
                attempt=record.attempts,
            )
            result = await self.pipelines.path2(self.context(record, marker), run)
            await self._deliver(record, machine, run, result, acks, marker)
        except (StateMoved, IllegalTransition) as exc:
            await self._drop_late(record, exc, acks=acks, release=marker)
        except Exception as exc:  # noqa: BLE001 - every failure ends the turn with a notice
            await self._fail(record, machine, self._reason(exc), acks=acks, release=marker)
        finally:
            logctx.turn_id.reset(token)

    async def _deliver(
        self,
        record: TurnRecord,
        machine: TurnLifecycle,
        run: CharacterRun,
        result: Path2Result,
        acks: tuple[str, ...],
        marker: str,
    ) -> None:
        follow = self._follow_up(run.event, result, record.pair)
        continuing = follow is not None and follow.typ == "continue"
        at = await self.records.transition(
            record,
            machine,
            "deliver",
            push=encode(follow) if follow is not None else None,
            ack=acks,
            release_marker="" if continuing else marker,
        )
        if not continuing:
            self.locks.forget(record.pair)
        log.info(
            "turn delivered",
            extra=fields(
                turn_id=record.turn_id,
                pair=record.pair,
                origin=result.origin,
                follow_up=follow.typ if follow is not None else None,
            ),
        )
        await self.hub.publish(
            record.user_id,
            CharacterResponse(
                character_id=record.character_id,
                at=at,
                turn_id=record.turn_id,
                message_ids=list(record.message_ids),
                text=result.text,
                origin=result.origin,
                emotion=result.emotion,
                arousal=result.arousal,
            ),
        )
        await self.publish_state(record, at)
        self.spawn(self._after_delivery(record, run, result), f"after:{record.turn_id}")

    def _follow_up(
        self, event: Event[EventPayload], result: Path2Result, pair: str
    ) -> Event[EventPayload] | None:
        """The follow-up event a run asked for, within the self-trigger cap."""
        follow = result.follow_up
        # Seed 001 §7.1: log every arrival of the field, present or not, so that a dead
        # channel is distinguishable from "no follow-up needed".
        log.info(
            "self-trigger field",
            extra=fields(
                pair=pair,
                present=follow is not None,
                value=type(follow).__name__ if follow is not None else None,
                trigger_count=event.trigger_count,
            ),
        )
        if isinstance(follow, Continue):
            limit = self.settings.max_self_triggers
            if event.trigger_count >= limit:
                log.warning(
                    "self-trigger dropped at the limit",
                    extra=fields(
                        trigger_count=event.trigger_count + 1,
                        limit=limit,
                        pair=pair,
                        setting="max_self_triggers",
                    ),
                )
                return None
            return continue_event(event, follow)
        if isinstance(follow, AwaitUser):
            return awaiting_event(event, follow.agent_context)
        return None

    async def _after_delivery(
        self, record: TurnRecord, run: CharacterRun, result: Path2Result
    ) -> None:
        try:
            await self.pipelines.after_delivery(self.context(record), run, result)
        except Exception:
            log.exception(
                "after-delivery step failed", extra=fields(turn_id=record.turn_id, pair=record.pair)
            )

    async def _fire(
        self, record: TurnRecord, machine: TurnLifecycle, trigger: str, *, push: bytes | None = None
    ) -> None:
        at = await self.records.transition(record, machine, trigger, push=push)
        await self.publish_state(record, at)

    async def _fail(
        self,
        record: TurnRecord,
        machine: TurnLifecycle,
        reason: str,
        *,
        acks: tuple[str, ...] = (),
        release: str = "",
    ) -> None:
        """End the turn with a notice naming every message id."""
        try:
            at = await self.records.transition(
                record, machine, "fail", reason=reason, ack=acks, release_marker=release
            )
        except (StateMoved, IllegalTransition) as exc:
            await self._drop_late(record, exc, acks=acks, release=release)
            return
        self.locks.forget(record.pair)
        await self._announce_failure(record, at, reason)

    async def fail_turn(self, record: TurnRecord, reason: str) -> bool:
        """Fail an open turn from outside its run (reset, recovery). False if it had ended."""
        machine = record.machine(self.settings.max_turn_attempts)
        try:
            at = await self.records.transition(record, machine, "fail", reason=reason)
        except (StateMoved, IllegalTransition):
            return False
        await self._announce_failure(record, at, reason)
        return True

    async def _announce_failure(self, record: TurnRecord, at: float, reason: str) -> None:
        """Log the failure and tell every tab: the new state, then the notice naming every id."""
        log.warning(
            "turn failed",
            extra=fields(
                turn_id=record.turn_id,
                pair=record.pair,
                reason=reason,
                message_ids=record.message_ids,
            ),
        )
        await self.publish_state(record, at)
        await self.hub.publish(
            record.user_id,
            TurnFailed(
                character_id=record.character_id,
                at=at,
                turn_id=record.turn_id,
                message_ids=list(record.message_ids),
                reason=reason,
            ),
        )

    async def _drop_late(
        self, record: TurnRecord, exc: Exception, *, acks: tuple[str, ...] = (), release: str = ""
    ) -> None:
        """The turn ended elsewhere (failed by a reset or recovery): drop our result, but
        still acknowledge what we took and give back the marker if it is ours.

        A run recovery took over (the stored attempts moved past this run's) acknowledges
        nothing: its events are the rerun's now — back in the queue, or about to be put back
        by the recovery pass that requeued the turn, or taken by the rerun — and removing
        them would leave the requeued turn with nothing to run."""
        stored = await self.records.turn(record.turn_id)
        taken_over = stored is not None and stored.attempts != record.attempts
        log.warning(
            "late result for an ended turn dropped",
            extra=fields(
                turn_id=record.turn_id,
                pair=record.pair,
                error=str(exc),
                state=stored.state if stored else None,
                taken_over=taken_over,
                attempts=record.attempts,
                stored_attempts=stored.attempts if stored else None,
            ),
        )
        user_id, character_id = record.user_id, record.character_id
        if acks and not taken_over:
            async with self.redis.pipeline(transaction=True) as pipe:
                for raw in acks:
                    pipe.lrem(keys.event_processing(user_id, character_id), 1, raw)
                await pipe.execute()
        if release:
            await self.locks.release(record.pair, release)

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, GuardFailed):
            # Ended by a reset or a recovery (then `_fail` finds it failed and drops the
            # result), or its marker expired: the turn wrote nothing and ends here.
            log.warning(
                "turn ended before its writes landed; nothing written", extra=fields(error=str(exc))
            )
            return TURN_ENDED
        if isinstance(exc, TurnRejected):
            log.warning(
                "turn rejected by its pipeline", extra=fields(reason=exc.reason, error=str(exc))
            )
            return exc.reason
        code = _model_error_code(exc)
        if code is not None:
            log.warning("model call failed", extra=fields(code=code, error=str(exc)))
            return code
        log.error("turn run crashed", exc_info=exc)
        return "internal_error"

    def slot(self) -> AbstractAsyncContextManager[None]:
        """One run slot of the model endpoint in use (`SlotTimeout` after
        `lock_wait_timeout`): the consumer holds it around a turn's run and takes the pair's
        marker only once it has it."""
        gateway = self.gateway()
        return self.slots.hold(gateway.endpoint if gateway is not None else None)

    async def fail_slot_timeout(
        self, record: TurnRecord, exc: SlotTimeout, *, acks: tuple[str, ...] = (), release: str = ""
    ) -> None:
        """The turn waited `lock_wait_timeout` for a run slot: it fails with `lock_timeout`,
        naming every message id."""
        log.warning(
            "no run slot free in time",
            extra=fields(
                turn_id=record.turn_id,
                pair=record.pair,
                waited_s=round(exc.waited, 3),
                limit=self.settings.lock_wait_timeout,
                setting="lock_wait_timeout",
            ),
        )
        machine = record.machine(self.settings.max_turn_attempts)
        await self._fail(record, machine, "lock_timeout", acks=acks, release=release)

    async def publish_state(self, record: TurnRecord, at: float | None = None) -> None:
        await self.hub.publish(
            record.user_id,
            TurnState(
                character_id=record.character_id,
                at=at or time.time(),
                turn_id=record.turn_id,
                state=record.state,
                message_ids=list(record.message_ids),
            ),
        )

    def context(self, record: TurnRecord, marker: str | None = None) -> PipelineContext:
        """What a pipeline run gets; `marker`: the pair's marker the running turn holds (its
        commit is guarded by it), None after the turn (after-delivery steps write no turn)."""

        async def stage(name: str) -> None:
            await self.hub.publish(
                record.user_id,
                CharacterStage(
                    character_id=record.character_id,
                    at=time.time(),
                    turn_id=record.turn_id,
                    stage=name,
                ),
            )

        guard = (
            None
            if marker is None
            else TurnGuard(
                record_key=keys.turn_record(record.turn_id),
                marker_key=keys.turn_marker(record.user_id, record.character_id),
                marker=marker,
                ended_states=(FAILED,),
            )
        )
        return PipelineContext(
            settings=self.settings,
            redis=self.redis,
            memory=self.memory,
            gateway=self.gateway(),
            stage=stage,
            guard=guard,
        )

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
