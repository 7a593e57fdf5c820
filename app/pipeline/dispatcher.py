"""The dispatcher — the one writer (seed 001 §5, seed 000 §5).

At the end of each path, and only here, a run leaves its traces, each complete and once:

- the session turn (user or character), with every field at once — no later annotation;
- short-term memory entries from the salient segments (when the importance reaches
  `salience_memory_threshold`);
- path 1 only: a promotion trigger on the pair's Pixie queue when the user's salience
  reaches `promotion_threshold` (seed 001 §5; consolidated into long-term memory by the
  Pixie worker, `app.pipeline.pixie`);
- one row of the durable message log in SQLite (through the database's single writer);
- path 2 only: the character's state (`nova_state`), the action mark on the user turn an
  agent action belonged to (completed → done + succeeded, error → done + failed, a question
  or a refusal → nothing), and the follow-up the run asks for (`awaiting_user` for an
  agent's question, else a `continue`: the thinker's retry, a commitment, or the wish to
  write again).

Before writing it asks the runtime whether the turn is still open: a turn failed meanwhile
(a session reset, a recovery) leaves no late write behind.
"""

from __future__ import annotations

import asyncio
import logging
import time

import msgspec

from app.clock import calendar_date, zone_named
from app.log import fields
from app.memory.pixie_queue import PixieQueue, new_trigger
from app.memory.state import CharacterState, save_state
from app.memory.turns import (
    ORIGIN_CONTINUE, ORIGIN_IMPULSE, ORIGIN_REPLY, ROLE_ASSISTANT, ROLE_USER, Turn,
)
from app.pipeline.context import NodeContext
from app.pipeline.state import AgentResult, Path1State, Path2State
from app.pipeline.stimulus import follow_up_payload, retry_payload
from app.pipeline.stores.message_log import LoggedMessage
from app.runtime.pipelines import AwaitUser, Continue

log = logging.getLogger(__name__)

HERKUNFT = {"reply": ORIGIN_REPLY, "continue": ORIGIN_CONTINUE, "own_impulse": ORIGIN_IMPULSE}


async def write_user_turn(ctx: NodeContext, state: Path1State) -> None:
    if not await ctx.alive():
        log.warning("turn ended meanwhile; path 1 writes nothing",
                    extra=fields(turn_id=state.turn_id))
        return
    perception, user = state.perception, state.user
    turn = Turn(turn_id=state.turn_id, role=ROLE_USER, content=state.text, time=state.said_at,
                message_ids=list(state.message_ids), intentions=list(perception.intentions),
                emotion=user.emotion, mode=user.mode, core=perception.core.strip(),
                arousal=user.arousal, emotions_vector=user.emotions_vector,
                language_style=user.language_style,
                relationship_dynamic=user.relationship_dynamic, tone=user.tone,
                topics=list(perception.topics))
    svc = ctx.services
    if any(t.role == ROLE_USER and t.turn_id == turn.turn_id for t in state.turns):
        # A rerun after a crash: the turn was stored by the first run; store it once.
        log.info("user turn stored already (a rerun); not stored again",
                 extra=fields(turn_id=turn.turn_id))
        state.stored = turn
        return
    # Independent writes: they go out together (Redis connections and the SQLite writer
    # overlap); each is complete on its own.
    await asyncio.gather(
        svc.memory.store(state.user_id, state.character_id, turn),
        _remember(ctx, state.user_id, state.character_id, turn,
                  state.salience.importance, state.salience.segments),
        _log(ctx, state.user_id, state.character_id, turn, entry_key=f"{turn.turn_id}:user"),
        _promote(ctx, state, turn))
    state.stored = turn


async def write_character_turn(ctx: NodeContext, state: Path2State) -> None:
    if not await ctx.alive():
        log.warning("turn ended meanwhile; path 2 writes nothing",
                    extra=fields(turn_id=state.turn_id))
        return
    final = after_answer(state)
    turn = Turn(turn_id=state.turn_id, role=ROLE_ASSISTANT, content=state.answer,
                time=ctx.services.clock(), origin=HERKUNFT[state.origin],
                message_ids=list(state.message_ids),
                intentions=[final.intent] if final.intent else [],
                emotion=final.emotion, mode=final.mode, arousal=final.arousal,
                emotions_vector=final.emotions_vector, language_style=final.language_style,
                relationship_dynamic=final.relationship_dynamic, tone=final.tone,
                topics=[final.prompt_topic] if final.prompt_topic else [])
    svc = ctx.services
    if _stored_already(state):
        log.info("answer of this run stored already (a rerun); not stored again",
                 extra=fields(turn_id=turn.turn_id, trigger_count=state.trigger_count))
        state.answer = _stored_answer(state)
        state.state = final
        state.follow_up = follow_up(state)
        return
    await asyncio.gather(
        svc.memory.store(state.user_id, state.character_id, turn),
        _remember(ctx, state.user_id, state.character_id, turn,
                  state.salience.importance, state.salience.segments),
        _log(ctx, state.user_id, state.character_id, turn,
             entry_key=f"{turn.turn_id}:assistant:{state.trigger_count}"),
        save_state(svc.redis, state.user_id, state.character_id, final),
        _mark_actions(ctx, state))
    state.stored = turn
    state.state = final
    state.follow_up = follow_up(state)


def _answers_of_turn(state: Path2State) -> list[Turn]:
    return [t for t in state.turns if t.role == ROLE_ASSISTANT and t.turn_id == state.turn_id]


def _stored_already(state: Path2State) -> bool:
    """Run k of a turn (trigger_count k) writes its (k+1)-th answer; more already stored
    means this run is a rerun after a crash."""
    return len(_answers_of_turn(state)) > state.trigger_count


def _stored_answer(state: Path2State) -> str:
    """What the first run of this step stored: the user sees that answer, not a second one."""
    return _answers_of_turn(state)[state.trigger_count].content


def after_answer(state: Path2State) -> CharacterState:
    """The character's state after its own answer: EI calc's numbers, the emotion as the
    character perceives it after speaking (when the salience names one)."""
    emotion = state.salience.emotion.strip().lower()
    return msgspec.structs.replace(state.state, emotion=emotion) if emotion else state.state


def follow_up(state: Path2State) -> Continue | AwaitUser | None:
    question = state.question
    if question is not None:
        return AwaitUser(agent_context=question.context)
    if state.retry:
        return Continue(payload=retry_payload(state.verdict.reason))
    verdict = state.verdict
    if verdict.commitment or verdict.follow_up:
        return Continue(payload=follow_up_payload(commitment=verdict.commitment,
                                                  intent=verdict.intent.strip()))
    return None


def action_outcome(results: list[AgentResult]) -> str | None:
    """One outcome for the user turn: an open question leaves it open, any error fails it,
    otherwise a completed action marks it done."""
    outcomes = {r.outcome for r in results}
    if "follow_up" in outcomes:
        return None
    if "error" in outcomes:
        return "error"
    if "completed" in outcomes:
        return "completed"
    return None


async def _mark_actions(ctx: NodeContext, state: Path2State) -> None:
    outcome = action_outcome(state.results)
    if outcome is None:
        return
    turn_ids = [state.turn_id]
    if state.pending is not None and state.pending.get("turn_id") not in (None, state.turn_id):
        turn_ids.insert(0, str(state.pending["turn_id"]))  # the request the question was about
    memory = ctx.services.memory
    for turn_id in turn_ids:
        await memory.record_action_outcome(state.user_id, state.character_id, turn_id,
                                           outcome,  # type: ignore[arg-type]
                                           seen=state.turns)


async def _remember(ctx: NodeContext, user_id: str, character_id: str, turn: Turn,
                    importance: float, segments: list[str]) -> None:
    if importance < ctx.settings.salience_memory_threshold or not segments:
        return
    stored = await ctx.services.short_term.add(
        user_id, character_id, segments, turn_id=turn.turn_id, role=turn.role,
        importance=importance, now=turn.time)
    log.info("short-term memory entries stored",
             extra=fields(turn_id=turn.turn_id, entries=len(stored), importance=importance))


async def _promote(ctx: NodeContext, state: Path1State, turn: Turn) -> None:
    """The promotion trigger: the user's block, its message ids and salient segments, for
    the Pixie worker to consolidate into long-term memory."""
    importance = state.salience.importance
    if importance < ctx.settings.promotion_threshold:
        return
    trigger = new_trigger(state.user_id, state.character_id, turn_id=turn.turn_id,
                          message_ids=list(turn.message_ids), text=turn.content,
                          segments=list(state.salience.segments), importance=importance,
                          now=turn.time)
    await PixieQueue(ctx.services.redis, state.user_id, state.character_id).push(trigger)
    ctx.services.wake_pixie()
    log.info("promotion trigger queued", extra=fields(
        turn_id=turn.turn_id, trigger_id=trigger.trigger_id, importance=importance,
        threshold=ctx.settings.promotion_threshold))


async def _log(ctx: NodeContext, user_id: str, character_id: str, turn: Turn, *,
               entry_key: str) -> None:
    written = await ctx.services.message_log.append(LoggedMessage(
        entry_key=entry_key, user_id=user_id, character_id=character_id,
        turn_id=turn.turn_id, message_ids=list(turn.message_ids), role=turn.role,
        origin=turn.origin, text=turn.content, created=turn.time or time.time(),
        calendar_date=calendar_date(turn.time or time.time(),
                                    zone_named(ctx.settings.timezone))))
    if not written:
        log.info("message log row existed already (a rerun)",
                 extra=fields(turn_id=turn.turn_id, entry_key=entry_key))
