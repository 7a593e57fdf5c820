"""The dispatcher — the one writer (seed 001 §5, seed 000 §5).

At the end of each path, and only here, a run leaves its traces, each complete and once:

- the session turn (user or character), with every field at once — no later annotation;
- short-term memory entries from the salient segments (when the importance reaches
  `salience_memory_threshold`);
- path 1 only: a promotion trigger on the pair's Pixie queue when the user's salience
  reaches `promotion_threshold` (seed 001 §5; consolidated into long-term memory by the
  Pixie worker, `app.consolidation`);
- one row of the durable message log in SQLite (through the database's single writer),
  promised in the turn's commit (`app.memory.message_log.LogOutbox`);
- path 2 only: the character's state (`nova_state`) and the stance computed from it
  (`haltung`, written every run — marked `gerechnet` = 0 when nothing could be computed),
  the action mark on the user turn an agent action belonged to (completed → done +
  succeeded, error → done + failed, a question or a refusal → nothing), and the follow-up
  the run asks for (`awaiting_user` for an agent's question, else a `continue`: the
  thinker's retry, a commitment, or the wish to write again).

The Redis writes of a turn — the turn, the state and stance, the short-term entries, the
action mark and the changes its agents intended (list edits, new, deleted and moved
reminders) — are one guarded
transaction (`app.memory.commit`), made after the tribunal: a rejected answer changes
nothing, and a turn failed meanwhile (a session reset, a recovery) leaves no late write
behind. The message-log row is part of that commit as a promise on the pair's outbox, and is
appended to SQLite right after it (idempotent by its entry key): a process that dies in
between leaves the promise, which the rerun, the pair's next commit or the recovery at start
delivers — never a stored turn without its row.

One module: the one writer is one place by rule (seed 001 §5); its writes are read and checked
together.
"""

from __future__ import annotations

import logging
import time

import msgspec

from app.core.clock import calendar_date, zone_named
from app.core.lifetime import crash_point
from app.core.log import fields
from app.core.settings import CrashPoint
from app.memory.commit import Write, commit
from app.memory.lists import EditWrite, ListEdit
from app.memory.message_log import LoggedMessage, Promise
from app.memory.pixie_queue import Trigger, new_trigger, push_write
from app.memory.reminders import ChangeWrite, ReminderChange, ReminderToAdd
from app.memory.short_term import MemoryEntry
from app.memory.stance import Stance, compute_stance, save_stance_write
from app.memory.state import CharacterState, save_state_write
from app.memory.turns import (
    OCCASION_OF_ORIGIN,
    ROLE_ASSISTANT,
    ROLE_USER,
    Turn,
    emotion_fields,
)
from app.pipeline.context import NodeContext
from app.pipeline.state import AgentContext, AgentResult, Path1State, Path2State
from app.pipeline.stimulus import follow_up_request, retry_request
from app.pipeline.vocabulary import AwaitUser, Continue

log = logging.getLogger(__name__)


async def write_user_turn(ctx: NodeContext, state: Path1State) -> None:
    perception = state.perception
    turn = Turn(
        turn_id=state.turn_id,
        role=ROLE_USER,
        content=state.text,
        time=state.said_at,
        message_ids=list(state.message_ids),
        core=perception.core.strip(),
        **emotion_fields(
            state.user, intentions=list(perception.intentions), topics=list(perception.topics)
        ),
    )
    svc = ctx.services
    if any(t.role == ROLE_USER and t.turn_id == turn.turn_id for t in state.turns):
        # A rerun after a crash: the turn was stored by the first run; store it once. Its
        # row was promised in that run's commit: it lands now if it had not yet.
        log.info(
            "user turn stored already (a rerun); not stored again",
            extra=fields(turn_id=turn.turn_id),
        )
        state.stored = turn
        await _deliver(ctx, state.user_id, state.character_id, None, "user:appended")
        return
    remember, entries = _remember(
        ctx,
        state.user_id,
        state.character_id,
        turn,
        state.salience.importance,
        state.salience.segments,
    )
    promotion = _promotion(ctx, state, turn)
    row = svc.log_outbox.promise(
        _log_row(ctx, state.user_id, state.character_id, turn, entry_key=f"{turn.turn_id}:user")
    )
    writes = [svc.memory.store_write(state.user_id, state.character_id, turn), remember, row.write]
    if promotion is not None:
        writes.append(push_write(promotion))  # in the turn's own atomic step
    await commit(svc.redis, ctx.guard, writes)
    crash_point(ctx.settings, "user:committed")
    _log_remembered(turn, entries, state.salience.importance)
    _promoted(ctx, promotion)
    state.stored = turn
    await _deliver(ctx, state.user_id, state.character_id, row, "user:appended")


async def write_character_turn(ctx: NodeContext, state: Path2State) -> None:
    final = after_answer(state)
    turn = Turn(
        turn_id=state.turn_id,
        role=ROLE_ASSISTANT,
        content=state.answer,
        time=ctx.services.clock(),
        occasion=OCCASION_OF_ORIGIN[state.origin],
        message_ids=list(state.message_ids),
        **emotion_fields(final),
    )
    svc = ctx.services
    user_id, character_id = state.user_id, state.character_id
    if _stored_already(state):
        # The first run committed the turn, its state, its mark and its agents' changes, and
        # promised its row: that lands now if it had not yet.
        log.info(
            "answer of this run stored already (a rerun); not stored again",
            extra=fields(turn_id=turn.turn_id, trigger_count=state.trigger_count),
        )
        state.answer = _stored_answer(state)
        state.state = final
        state.follow_up = follow_up(state)
        await _deliver(ctx, user_id, character_id, None, "answer:appended")
        return
    remember, entries = _remember(
        ctx, user_id, character_id, turn, state.salience.importance, state.salience.segments
    )
    effects = _effect_writes(ctx, state)
    stance = compute_stance(final, turn_id=state.turn_id, now=turn.time)
    row = svc.log_outbox.promise(
        _log_row(
            ctx,
            user_id,
            character_id,
            turn,
            entry_key=f"{turn.turn_id}:assistant:{state.trigger_count}",
        )
    )
    writes: list[Write] = [
        svc.memory.store_write(user_id, character_id, turn),
        save_state_write(user_id, character_id, final),
        save_stance_write(user_id, character_id, stance),
        remember,
        *_mark_writes(ctx, state),
        *effects,
        row.write,
    ]
    await commit(svc.redis, ctx.guard, writes)
    crash_point(ctx.settings, "answer:committed")
    state.stance = stance
    _log_stance(stance)
    _log_remembered(turn, entries, state.salience.importance)
    _log_effects(effects)
    if any(
        isinstance(e, (ReminderToAdd, ReminderChange)) for r in state.results for e in r.effects
    ):
        svc.wake_clock()
    state.stored = turn
    state.state = final
    state.follow_up = follow_up(state)
    await _deliver(ctx, user_id, character_id, row, "answer:appended")
    marked = _marked_turns(state)
    if marked is not None:  # the same mark beside the message log, for the journal
        await svc.message_log.mark_actions(user_id, character_id, *marked, at=turn.time)


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
        return AwaitUser(agent_context=msgspec.to_builtins(question.context or AgentContext()))
    if state.retry:
        return retry_request(state.verdict.reason)
    verdict = state.verdict
    if verdict.commitment or verdict.follow_up:
        return follow_up_request(commitment=verdict.commitment, intent=verdict.intent.strip())
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


def _marked_turns(state: Path2State) -> tuple[list[str], bool] | None:
    """The user turns an agent action belonged to (and the request an agent's question was
    about, when this run answers it), and whether it succeeded; None: nothing to mark."""
    outcome = action_outcome(state.results)
    if outcome is None:
        return None
    turn_ids = [state.turn_id]
    if state.pending is not None and state.pending.turn_id not in ("", state.turn_id):
        turn_ids.insert(0, state.pending.turn_id)  # the request the question was about
    return turn_ids, outcome == "completed"


def _mark_writes(ctx: NodeContext, state: Path2State) -> list[Write]:
    """The action mark on the session's user turns (`_marked_turns`)."""
    marked = _marked_turns(state)
    if marked is None:
        return []
    turn_ids, succeeded = marked
    return [
        ctx.services.memory.mark_write(
            state.user_id, state.character_id, turn_ids, success=succeeded
        )
    ]


def _effect_writes(ctx: NodeContext, state: Path2State) -> list[Write]:
    """The changes the run's agents intended, as parts of the turn's commit."""
    writes: list[Write] = []
    for result in state.results:
        for effect in result.effects:
            if isinstance(effect, ListEdit):
                store = ctx.services.lists.of(state.user_id, state.character_id)
                writes.append(store.edit_write(effect))
            elif isinstance(effect, ReminderChange):
                writes.append(ctx.services.reminders.change_write(effect))
            else:
                writes.append(ctx.services.reminders.add_write(effect.reminder))
    return writes


def _log_effects(writes: list[Write]) -> None:
    for write in writes:
        if isinstance(write, ChangeWrite):
            if write.done:
                log.info(
                    "reminder changed",
                    extra=fields(reminder_id=write.change.reminder_id, deleted=write.change.delete),
                )
            else:
                log.warning(
                    "reminder removed meanwhile (or a move would pass "
                    "max_reminders_per_pair); the change changed nothing",
                    extra=fields(
                        reminder_id=write.change.reminder_id, limit="max_reminders_per_pair"
                    ),
                )
            continue
        if not isinstance(write, EditWrite):
            continue
        change = write.change
        if change is None:
            log.warning(
                "list removed meanwhile; the edit changed nothing",
                extra=fields(list=write.edit.list_name),
            )
        else:
            log.info(
                "list changed",
                extra=fields(
                    list=change.named.name,
                    created=change.created,
                    added=len(change.added),
                    removed=len(change.removed),
                    cleared=change.cleared,
                ),
            )


def _remember(
    ctx: NodeContext,
    user_id: str,
    character_id: str,
    turn: Turn,
    importance: float,
    segments: list[str],
) -> tuple[Write, list[MemoryEntry]]:
    """Short-term memory entries of the salient segments (none below the threshold)."""
    if importance < ctx.settings.salience_memory_threshold:
        segments = []
    return ctx.services.short_term.add_write(
        user_id,
        character_id,
        segments,
        turn_id=turn.turn_id,
        role=turn.role,
        importance=importance,
        now=turn.time,
    )


def _log_stance(stance: Stance) -> None:
    log.info(
        "stance written",
        extra=fields(
            turn_id=stance.turn_id,
            computed=stance.computed,
            cluster=stance.cluster,
            reason=stance.reason,
        ),
    )


def _log_remembered(turn: Turn, entries: list[MemoryEntry], importance: float) -> None:
    if entries:
        log.info(
            "short-term memory entries stored",
            extra=fields(turn_id=turn.turn_id, entries=len(entries), importance=importance),
        )


def _promotion(ctx: NodeContext, state: Path1State, turn: Turn) -> Trigger | None:
    """The promotion trigger when the user's salience reaches `promotion_threshold`: the
    user's block, its message ids and salient segments, for the Pixie worker to consolidate
    into long-term memory."""
    importance = state.salience.importance
    if importance < ctx.settings.promotion_threshold:
        return None
    return new_trigger(
        state.user_id,
        state.character_id,
        turn_id=turn.turn_id,
        message_ids=list(turn.message_ids),
        text=turn.content,
        segments=list(state.salience.segments),
        importance=importance,
        now=turn.time,
    )


def _promoted(ctx: NodeContext, trigger: Trigger | None) -> None:
    if trigger is None:
        return
    ctx.services.wake_pixie()
    log.info(
        "promotion trigger queued",
        extra=fields(
            turn_id=trigger.turn_id,
            trigger_id=trigger.trigger_id,
            importance=trigger.importance,
            threshold=ctx.settings.promotion_threshold,
        ),
    )


def _log_row(
    ctx: NodeContext, user_id: str, character_id: str, turn: Turn, *, entry_key: str
) -> LoggedMessage:
    created = turn.time or time.time()
    return LoggedMessage(
        entry_key=entry_key,
        user_id=user_id,
        character_id=character_id,
        turn_id=turn.turn_id,
        message_ids=list(turn.message_ids),
        role=turn.role,
        occasion=turn.occasion,
        text=turn.content,
        created=created,
        calendar_date=calendar_date(created, zone_named(ctx.settings.timezone)),
    )


async def _deliver(
    ctx: NodeContext, user_id: str, character_id: str, row: Promise | None, crash_at: CrashPoint
) -> None:
    """The message-log rows the pair's commits promised (`row`'s commit read them back; None:
    a rerun, which reads them now), appended once."""
    pending = None if row is None else row.pending
    delivered = await ctx.services.log_outbox.deliver(
        user_id, character_id, pending, crash_at=crash_at
    )
    if row is not None and not delivered.get(row.entry.entry_key, True):
        log.info(
            "message log row existed already (a rerun)",
            extra=fields(turn_id=row.entry.turn_id, entry_key=row.entry.entry_key),
        )
    late = [
        key for key, new in delivered.items() if new and (row is None or key != row.entry.entry_key)
    ]
    if late:
        log.warning(
            "message log rows of an earlier commit appended now",
            extra=fields(user_id=user_id, character_id=character_id, entry_keys=late),
        )
