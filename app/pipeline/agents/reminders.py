"""The reminders agent: a reminder with a due time (seed 001 §6.3, the seed's TimelineAgent).

The model reads the task (`agent_reminders`: what, and when as ISO 8601 counted from the
"now" it is shown, in the user's time zone); the agent reads the time with the one due-time
parser and returns the reminder it intends, which the dispatcher stores with the turn and the
reminder clock later turns into an own impulse. No time, an unreadable time or a time in the past:
it asks "when?" (outcome `follow_up`), and the user's next message resumes it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping

import msgspec

from app.core.clock import local_moment, zone_named
from app.core.i18n import WEEKDAYS, language_of, texts
from app.core.log import fields
from app.memory.reminders import (
    DueTimeError,
    DueTimeRefused,
    Reminder,
    ReminderToAdd,
    check_due_at,
    new_reminder,
    parse_due,
)
from app.pipeline.agents.follow_up import follow_up, original_command, pending_text
from app.pipeline.context import NodeContext, reply_language
from app.pipeline.prompts import frame
from app.pipeline.schemas import ReminderCommand
from app.pipeline.state import AgentContext, AgentResult, Path2State

log = logging.getLogger(__name__)

AGENT = "reminders"

def now_text(now: float, zone: dt.tzinfo | None, language: str) -> str:
    """`2026-11-30T10:15:00+01:00 (Montag)`: what the model counts "tomorrow" from, in the
    user's time zone."""
    moment = local_moment(now, zone).replace(microsecond=0)
    return f"{moment.isoformat()} ({WEEKDAYS[language_of(language)][moment.weekday()]})"


def when_text(due_at: float, zone: dt.tzinfo | None, language: str) -> str:
    return _phrases(language)["when"].format(date=local_moment(due_at, zone))


async def run(ctx: NodeContext, state: Path2State, task: str,
              pending: AgentContext | None) -> AgentResult:
    now = ctx.services.clock()
    zone = zone_named(ctx.settings.timezone)
    b = ctx.blocks
    command: ReminderCommand = await ctx.ask_struct("agent_reminders", frame([
        (b.now, now_text(now, zone, ctx.language)),
        (b.pending, pending_text(pending)),
        (b.task, task)]))
    if pending is not None:
        command = resumed(command, pending)
    language = reply_language(ctx, state)
    words = _phrases(language)
    store = ctx.services.reminders
    if command.show and not command.text:
        waiting = await store.pending(state.user_id, state.character_id)
        return AgentResult(agent=AGENT, task=task, outcome="completed",
                           said=[list_text(waiting, zone, language)])
    if not command.text.strip() and not command.due_at.strip():
        return AgentResult(agent=AGENT, task=task, outcome="nothing")
    if not command.text.strip():
        return _ask(state, task, command, pending, words["ask_what"])
    try:
        due_at = parse_due(command.due_at, zone=zone)
    except DueTimeError:
        if command.due_at.strip():
            log.warning("reminder time unreadable; asking", extra=fields(due_at=command.due_at))
        return _ask(state, task, command, pending, words["ask_when"].format(text=command.text))
    try:
        check_due_at(due_at, now, ctx.settings.reminder_max_days_ahead)
    except DueTimeRefused as refused:
        log.warning("reminder time refused; asking", extra=fields(
            due_at=command.due_at, problem=refused.problem))
        question = words["ask_when"].format(text=command.text)
        if refused.problem == "past":
            try:
                question = words["past"].format(when=when_text(due_at, zone, language),
                                                text=command.text)
            except (OverflowError, OSError, ValueError):
                pass  # year 1 and the like: not worth naming
        return _ask(state, task, msgspec.structs.replace(command, due_at=""), pending, question)
    cap = ctx.settings.max_reminders_per_pair
    if len(await store.pending(state.user_id, state.character_id)) >= cap:
        log.warning("reminder refused: cap", extra=fields(limit=cap,
                                                          setting="max_reminders_per_pair"))
        return AgentResult(agent=AGENT, task=task, outcome="refused",
                           said=[words["too_many"].format(count=cap)])
    request_turn = (pending.turn_id if pending is not None else "") or state.turn_id
    reminder = new_reminder(state.user_id, state.character_id, command.text, due_at,
                            trigger_turn_id=request_turn, now=now)
    log.info("reminder intended", extra=fields(reminder_id=reminder.id, due_at=due_at))
    return AgentResult(agent=AGENT, task=task, outcome="completed", said=[
        words["set"].format(text=reminder.text, when=when_text(due_at, zone, language))],
        effects=[ReminderToAdd(reminder=reminder)])


def resumed(answer: ReminderCommand, pending: AgentContext) -> ReminderCommand:
    original = original_command(pending, ReminderCommand, AGENT)
    if original is None:
        return answer
    return ReminderCommand(text=answer.text or original.text,
                           due_at=answer.due_at or original.due_at,
                           show=answer.show and not original.text)


def _ask(state: Path2State, task: str, command: ReminderCommand,
         pending: AgentContext | None, question: str) -> AgentResult:
    return follow_up(AGENT, state, task, command, pending, question)


def list_text(reminders: list[Reminder], zone: dt.tzinfo | None, language: str) -> str:
    words = _phrases(language)
    if not reminders:
        return words["none"]
    items = "; ".join(words["item"].format(text=r.text, when=when_text(r.due_at, zone, language))
                      for r in reminders)
    return words["list"].format(items=items)



def _phrases(language: str) -> Mapping[str, str]:
    return texts("reminders", language)
