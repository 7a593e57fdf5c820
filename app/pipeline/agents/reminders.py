"""The reminders agent: a reminder with a due time (seed 001 §6.3, the seed's TimelineAgent),
and the user's changes of one by chat.

The model reads the task (`agent_reminders`: what, and when as ISO 8601 counted from the
"now" it is shown, in the user's time zone; the reminders there are shown too); the agent reads
the time with the one due-time parser and returns the reminder it intends, which the
dispatcher stores with the turn and the reminder clock later turns into an own impulse. No
time, an unreadable time or a time in the past: it asks "when?" (outcome `follow_up`), and
the user's next message resumes it.

"Lösch die Erinnerung an den Zahnarzt" / "Verschieb den Zahnarzt auf 10 Uhr" (`delete`,
`move`) act on the reminder the words name — never a new one: the agent finds it among the
pair's reminders that are not done (by its words; one of several asks "which?"; a pronoun
the conversation gave no meaning — "Verschieb ihn" — asks which of them), and returns
the `ReminderChange`, applied with the turn. None that fits: it says so. A move checks the
new time like a new reminder's (and the cap, for one that had fired).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Mapping

import msgspec

from app.core.clock import local_moment, zone_named
from app.core.grammar import is_pronoun, join
from app.core.i18n import WEEKDAYS, language_of, sentence_date, texts
from app.core.log import fields
from app.llm.offline.lexicon import STOPWORDS
from app.llm.offline.text import words as words_of
from app.memory.reminders import (
    OPEN,
    DueTimeError,
    DueTimeRefused,
    Reminder,
    ReminderChange,
    ReminderToAdd,
    check_due_at,
    new_reminder,
    parse_due,
)
from app.pipeline.agents.follow_up import follow_up, original_command, pending_text
from app.pipeline.context import NodeContext, reply_language
from app.pipeline.prompts import frame
from app.pipeline.schemas import AgentName, ReminderCommand
from app.pipeline.state import AgentContext, AgentResult, Path2State

log = logging.getLogger(__name__)

AGENT: AgentName = "reminders"


def now_text(now: float, zone: dt.tzinfo | None, language: str) -> str:
    """`2026-11-30T10:15:00+01:00 (Montag)`: what the model counts "tomorrow" from, in the
    user's time zone."""
    moment = local_moment(now, zone).replace(microsecond=0)
    return f"{moment.isoformat()} ({WEEKDAYS[language_of(language)][moment.weekday()]})"


def when_text(due_at: float, zone: dt.tzinfo | None, language: str) -> str:
    """ "am 02.12.2026 um 09:00 Uhr" / "on December 2, 2026 at 09:00": the due time in a
    reply, the date as the language writes it."""
    moment = local_moment(due_at, zone)
    return _phrases(language)["when"].format(date=moment, day=sentence_date(moment, language))


def reminders_text(reminders: list[Reminder], zone: dt.tzinfo | None, language: str) -> str:
    """The reminders as the prompts show them: `- text — 2026-12-01T09:00:00+01:00 (Dienstag)`."""
    return "\n".join(f"- {r.text} — {now_text(r.due_at, zone, language)}" for r in reminders)


def changeable(reminders: list[Reminder]) -> list[Reminder]:
    """What a delete or a move by chat may mean: every reminder not marked done."""
    return [r for r in reminders if r.status != "done"]


async def run(
    ctx: NodeContext, state: Path2State, task: str, pending: AgentContext | None
) -> AgentResult:
    now = ctx.services.clock()
    zone = zone_named(ctx.settings.timezone)
    b = ctx.blocks
    store = ctx.services.reminders
    existing = changeable(await store.list(state.user_id, state.character_id))
    command: ReminderCommand = await ctx.ask_struct(
        "agent_reminders",
        frame(
            [
                (b.now, now_text(now, zone, ctx.language)),
                (b.reminders, reminders_text(existing, zone, ctx.language)),
                (b.history, state.history),
                (b.pending, pending_text(pending)),
                (b.task, task),
            ]
        ),
    )
    if pending is not None:
        command = resumed(command, pending)
    language = reply_language(ctx, state)
    words = _phrases(language)
    if command.delete or command.move:
        return change(ctx, state, task, command, pending, existing, now)
    if command.show and not command.text:
        waiting = await store.pending(state.user_id, state.character_id)
        return AgentResult(
            agent=AGENT, task=task, outcome="completed", said=[list_text(waiting, zone, language)]
        )
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
        log.warning(
            "reminder time refused; asking",
            extra=fields(due_at=command.due_at, problem=refused.problem),
        )
        question = words["ask_when"].format(text=command.text)
        if refused.problem == "past":
            with contextlib.suppress(OverflowError, OSError, ValueError):  # year 1 and the like
                question = words["past"].format(
                    when=when_text(due_at, zone, language), text=command.text
                )
        return _ask(state, task, msgspec.structs.replace(command, due_at=""), pending, question)
    cap = ctx.settings.max_reminders_per_pair
    if len(await store.pending(state.user_id, state.character_id)) >= cap:
        log.warning(
            "reminder refused: cap", extra=fields(limit=cap, setting="max_reminders_per_pair")
        )
        return AgentResult(
            agent=AGENT, task=task, outcome="refused", said=[words["too_many"].format(count=cap)]
        )
    request_turn = (pending.turn_id if pending is not None else "") or state.turn_id
    reminder = new_reminder(
        state.user_id,
        state.character_id,
        command.text,
        due_at,
        trigger_turn_id=request_turn,
        now=now,
    )
    log.info("reminder intended", extra=fields(reminder_id=reminder.id, due_at=due_at))
    return AgentResult(
        agent=AGENT,
        task=task,
        outcome="completed",
        said=[words["set"].format(text=reminder.text, when=when_text(due_at, zone, language))],
        effects=[ReminderToAdd(reminder=reminder)],
    )


def resumed(answer: ReminderCommand, pending: AgentContext) -> ReminderCommand:
    original = original_command(pending, ReminderCommand, AGENT)
    if original is None:
        return answer
    if original.delete or original.move:  # "which one?" / "to when?": the change goes on
        return msgspec.structs.replace(
            original, text=original.text or answer.text, due_at=answer.due_at or original.due_at
        )
    return ReminderCommand(
        text=answer.text or original.text,
        due_at=answer.due_at or original.due_at,
        show=answer.show and not original.text,
    )


def change(
    ctx: NodeContext,
    state: Path2State,
    task: str,
    command: ReminderCommand,
    pending: AgentContext | None,
    existing: list[Reminder],
    now: float,
) -> AgentResult:
    """Delete or move the reminder the command names."""
    language = reply_language(ctx, state)
    words = _phrases(language)
    chosen = among(existing, pending)
    if is_pronoun(command.text) and chosen:
        # "Verschieb ihn" with nothing in the conversation it stands for: ask, never guess.
        return _which(ctx, state, task, msgspec.structs.replace(command, text=""), pending, chosen)
    found = matching(command.text, chosen, task if pending is not None else "")
    if not found:
        log.info("no reminder fits the change", extra=fields(delete=command.delete))
        return AgentResult(
            agent=AGENT,
            task=task,
            outcome="refused",
            said=[
                words["not_found"].format(text=command.text)
                if command.text.strip()
                else words["none"]
            ],
        )
    if len(found) > 1:
        if pending is not None and pending.candidates:
            return AgentResult(
                agent=AGENT, task=task, outcome="refused", said=[words["still_unclear"]]
            )
        return _which(ctx, state, task, command, pending, found)
    reminder = found[0]
    if command.delete:
        log.info("reminder deletion intended", extra=fields(reminder_id=reminder.id))
        return AgentResult(
            agent=AGENT,
            task=task,
            outcome="completed",
            said=[words["deleted"].format(text=reminder.text)],
            effects=[
                ReminderChange(
                    user_id=state.user_id,
                    character_id=state.character_id,
                    reminder_id=reminder.id,
                    delete=True,
                )
            ],
        )
    return move(ctx, state, task, command, pending, reminder, existing, now)


def move(
    ctx: NodeContext,
    state: Path2State,
    task: str,
    command: ReminderCommand,
    pending: AgentContext | None,
    reminder: Reminder,
    existing: list[Reminder],
    now: float,
) -> AgentResult:
    zone = zone_named(ctx.settings.timezone)
    language = reply_language(ctx, state)
    words = _phrases(language)
    named = msgspec.structs.replace(command, text=reminder.text)
    ask_when = words["ask_move"].format(text=reminder.text)
    try:
        due_at = parse_due(command.due_at, zone=zone)
        check_due_at(due_at, now, ctx.settings.reminder_max_days_ahead)
    except (DueTimeError, DueTimeRefused) as refused:
        if command.due_at.strip():
            log.warning(
                "new reminder time refused; asking",
                extra=fields(
                    due_at=command.due_at, problem=getattr(refused, "problem", "not_a_time")
                ),
            )
        return _ask(state, task, msgspec.structs.replace(named, due_at=""), pending, ask_when)
    cap = ctx.settings.max_reminders_per_pair
    if reminder.status not in OPEN and sum(r.status in OPEN for r in existing) >= cap:
        log.warning(
            "reminder move refused: cap", extra=fields(limit=cap, setting="max_reminders_per_pair")
        )
        return AgentResult(
            agent=AGENT, task=task, outcome="refused", said=[words["too_many"].format(count=cap)]
        )
    log.info("reminder move intended", extra=fields(reminder_id=reminder.id, due_at=due_at))
    return AgentResult(
        agent=AGENT,
        task=task,
        outcome="completed",
        said=[words["moved"].format(text=reminder.text, when=when_text(due_at, zone, language))],
        effects=[
            ReminderChange(
                user_id=state.user_id,
                character_id=state.character_id,
                reminder_id=reminder.id,
                due_at=due_at,
                cap=cap,
            )
        ],
    )


def _which(
    ctx: NodeContext,
    state: Path2State,
    task: str,
    command: ReminderCommand,
    pending: AgentContext | None,
    found: list[Reminder],
) -> AgentResult:
    """Asks which of `found` the change means; the answer resumes it among them."""
    zone = zone_named(ctx.settings.timezone)
    language = reply_language(ctx, state)
    words = _phrases(language)
    options = join(
        [
            words["item"].format(text=r.text, when=when_text(r.due_at, zone, language))
            for r in found
        ],
        words["or"],
    )
    return follow_up(
        AGENT,
        state,
        task,
        command,
        pending,
        words["which"].format(options=options),
        candidates=[r.id for r in found],
    )


def among(existing: list[Reminder], pending: AgentContext | None) -> list[Reminder]:
    """The reminders a change may mean: those the question offered, when it answers one."""
    if pending is None or not pending.candidates:
        return existing
    offered = set(pending.candidates)
    return [r for r in existing if r.id in offered]


def matching(text: str, reminders: list[Reminder], answer: str = "") -> list[Reminder]:
    """The reminders `text` names: the one of that very text, else those sharing the most
    of its words; with an `answer` to "which?", the ones it names among them. Nothing named
    and one reminder: that one."""
    wanted = " ".join(text.split()).casefold()
    exact = [r for r in reminders if " ".join(r.text.split()).casefold() == wanted]
    if exact and wanted:
        return exact
    if answer:
        picked = _best(answer, reminders)
        if picked:
            return picked
    if not wanted:
        return reminders if len(reminders) == 1 else []
    return _best(text, reminders)


def _best(text: str, reminders: list[Reminder]) -> list[Reminder]:
    words = _content(text)
    scores = [(len(words & _content(r.text)), r) for r in reminders]
    top = max((score for score, _ in scores), default=0)
    return [r for score, r in scores if score == top] if top else []


def _content(text: str) -> set[str]:
    return {w.casefold() for w in words_of(text) if len(w) >= 3 and w.casefold() not in STOPWORDS}


def _ask(
    state: Path2State,
    task: str,
    command: ReminderCommand,
    pending: AgentContext | None,
    question: str,
) -> AgentResult:
    return follow_up(AGENT, state, task, command, pending, question)


def list_text(reminders: list[Reminder], zone: dt.tzinfo | None, language: str) -> str:
    words = _phrases(language)
    if not reminders:
        return words["none"]
    items = "; ".join(
        words["item"].format(text=r.text, when=when_text(r.due_at, zone, language))
        for r in reminders
    )
    return words["list"].format(items=items)


def _phrases(language: str) -> Mapping[str, str]:
    return texts("reminders", language)
