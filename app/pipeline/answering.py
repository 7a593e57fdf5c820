"""Path 2's answer part: conversation vector → responder → thinker → tribunal (seed 001 §2,
design §6).

- `conversation_vector`: where the conversation is heading, from the stored turns.
- `responder` speaks from the character's persona; an impulse reaches it as its own thought
  in its own block, never as something the user said.
- `thinker`: does the answer meet the request? One regeneration; a second miss delivers the
  answer and asks for a `continue` retry that inherits the `turn_id`.
- `tribunal`: validators and one corrector rewrite (`app.pipeline.tribunal`); what is still
  wrong after it ends the run with `tribunal_rejected`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from app.core.i18n import language_of
from app.core.log import fields
from app.llm.errors import ModelError
from app.memory.turns import ROLE_ASSISTANT, ROLE_USER
from app.pipeline import tribunal
from app.pipeline.context import NodeContext
from app.pipeline.prompts import frame, tasks_for
from app.pipeline.recall import known_text
from app.pipeline.schemas import Verdict
from app.pipeline.state import Path2State
from app.pipeline.vocabulary import TurnRejected

log = logging.getLogger(__name__)

REJECTED = "tribunal_rejected"


async def conversation_vector(ctx: NodeContext, state: Path2State) -> None:
    """Where the conversation is heading (the seed's GV node), computed from the stored
    turns: the user's arousal over the last exchanges, recent topics, the last intention."""
    users = [t for t in state.turns if t.role == ROLE_USER][-5:]
    if not users:
        state.vector = ""
        return
    arousals = [t.arousal for t in users if t.arousal is not None]
    topics = list(dict.fromkeys(topic for t in users[-3:] for topic in t.topics))[:5]
    words = VECTOR_WORDS[language_of(ctx.language)]
    parts = []
    if len(arousals) >= 2:
        delta = arousals[-1] - arousals[0]
        trend = (
            words["rising"]
            if delta > 0.1
            else words["falling"]
            if delta < -0.1
            else words["steady"]
        )
        parts.append(words["arousal"].format(trend=trend, first=arousals[0], last=arousals[-1]))
    if topics:
        parts.append(words["topics"].format(topics=", ".join(topics)))
    if users[-1].intentions:
        parts.append(words["intent"].format(intent=", ".join(users[-1].intentions)))
    state.vector = "\n".join(parts)


VECTOR_WORDS = {
    "de": {
        "arousal": "Erregung des Menschen: {trend} ({first:.2f} → {last:.2f})",
        "rising": "steigend",
        "falling": "fallend",
        "steady": "gleichbleibend",
        "topics": "Themen: {topics}",
        "intent": "Zuletzt wollte er: {intent}",
    },
    "en": {
        "arousal": "The person's arousal: {trend} ({first:.2f} → {last:.2f})",
        "rising": "rising",
        "falling": "falling",
        "steady": "steady",
        "topics": "Topics: {topics}",
        "intent": "Last they wanted: {intent}",
    },
}


def responder_frame(ctx: NodeContext, state: Path2State, regenerate: str = "") -> str:
    b, tasks = ctx.blocks, tasks_for(ctx.language)
    stimulus = state.stimulus
    question = state.question
    said = [line for r in state.results if r.outcome != "follow_up" for line in r.said]
    if question is not None:
        task = tasks.question
    elif stimulus.kind == "thought":
        task = tasks.thought
    elif stimulus.kind == "continue":
        task = tasks.continue_.format(intent=stimulus.intent or "")
    elif stimulus.kind == "retry":
        task = tasks.retry
    else:
        task = tasks.reply
    if regenerate:
        task = f"{task}\n{tasks.regenerate.format(reason=regenerate)}"
    return frame(
        [
            (b.summary, state.summary),
            (b.lore, "\n".join(state.lore)),
            (b.known, known_text(ctx, state)),
            (b.memory, "\n".join(f"- {m.text}" for m in state.memories)),
            (b.greeting, greeting_text(ctx, state)),
            (b.history, state.history),
            (b.vector, state.vector),
            (b.mood, mood_text(state)),
            (b.actions, "\n".join(f"- {line}" for line in said)),
            (b.question, question.question if question is not None else ""),
            (b.thought, stimulus.text if stimulus.kind == "thought" else ""),
            (b.retry, stimulus.reason if stimulus.kind == "retry" else ""),
            (b.task, task),
        ]
    )


def greeting_text(ctx: NodeContext, state: Path2State) -> str:
    """The character's greeting, while the session holds no answer of the character yet: the
    page showed it as the conversation's first message, and the user may be answering it."""
    if not ctx.character.greeting or any(t.role == ROLE_ASSISTANT for t in state.turns):
        return ""
    return ctx.character.for_screen(ctx.character.greeting)


_MOOD_LABELS = ("mode", "tone", "language_style", "relationship_dynamic")


def mood_text(state: Path2State) -> str:
    s = state.state
    parts = [f"emotion: {s.emotion}", f"arousal: {s.arousal:.2f}"]
    parts += [f"{name}: {getattr(s, name)}" for name in _MOOD_LABELS if getattr(s, name)]
    return ", ".join(parts)


async def respond(ctx: NodeContext, state: Path2State) -> None:
    state.answer = await _draft(ctx, state)


async def _draft(ctx: NodeContext, state: Path2State, regenerate: str = "") -> str:
    completion = await ctx.ask("responder", responder_frame(ctx, state, regenerate))
    text = completion.text.strip()
    state.drafts.append(text)
    return text


async def think(ctx: NodeContext, state: Path2State) -> None:
    """One regeneration when the answer misses the request; a second miss: deliver, and ask
    for a `continue` retry under the same turn id (the dispatcher emits it)."""
    state.verdict = await _verdict(ctx, state)
    if not state.verdict.misses_request:
        return
    log.info(
        "thinker: answer misses the request; one regeneration",
        extra=fields(reason=state.verdict.reason),
    )
    state.answer = await _draft(ctx, state, regenerate=state.verdict.reason or "-")
    state.verdict = await _verdict(ctx, state)
    if state.verdict.misses_request:
        state.retry = True
        log.warning(
            "thinker: the regenerated answer misses the request too; continue retry",
            extra=fields(reason=state.verdict.reason),
        )


async def _verdict(ctx: NodeContext, state: Path2State) -> Verdict:
    b = ctx.blocks
    stimulus = state.stimulus
    request = stimulus.text if stimulus.kind in ("user", "retry") else ""
    return await ctx.ask_struct(
        "thinker",
        frame(
            [
                (b.known, known_text(ctx, state)),
                (b.history, state.history),
                (b.request, request),
                (b.thought, stimulus.text if stimulus.kind == "thought" else ""),
                (b.intent, stimulus.intent if stimulus.kind == "continue" else ""),
                (b.question, state.question.question if state.question else ""),
                (b.answer, state.answer),
            ]
        ),
    )


async def judge(ctx: NodeContext, state: Path2State) -> None:
    """The tribunal: validate; hard findings → the corrector once → labels stripped →
    reject what is still empty or leaking."""
    check = _checker(ctx, state)
    findings = check(state.answer)
    _log_findings(findings, "answer")
    if not any(f.hard for f in findings):
        return
    rewrite = await _correct(ctx, state, findings)
    again = check(rewrite)
    if any(f.hard for f in again):
        _log_findings(again, "rewrite")
        if any(f.code == "speaker_label" for f in again):
            rewrite = tribunal.strip_labels(rewrite, ctx.character.name)
            again = check(rewrite)
        hard = [f for f in again if f.hard]
        if hard:
            raise TurnRejected(REJECTED, "; ".join(f"{f.code}: {f.detail}" for f in hard))
    state.findings = [f.code for f in findings]
    state.answer = rewrite


def _checker(ctx: NodeContext, state: Path2State) -> Callable[[str], list[tribunal.Finding]]:
    instructions = tribunal.instruction_sentences(
        [
            ctx.services.prompts.system(
                "responder",
                ctx.language,
                persona=ctx.persona,
                character_name=ctx.character.name,
                interaction_hint=ctx.interaction_hint,
            )
        ]
    )

    def check(text: str) -> list[tribunal.Finding]:
        return tribunal.validate(
            text,
            character_name=ctx.character.name,
            previous=state.previous_answer,
            expected_language=state.expected_language,
            instruction_parts=instructions,
        )

    return check


async def _correct(ctx: NodeContext, state: Path2State, findings: list[tribunal.Finding]) -> str:
    b = ctx.blocks
    try:
        completion = await ctx.ask(
            "corrector",
            frame(
                [
                    (b.findings, "\n".join(f"- {f.code}: {f.detail}" for f in findings if f.hard)),
                    (b.answer, state.answer),
                ]
            ),
        )
    except ModelError as exc:
        log.warning("corrector failed; the answer goes on as it is", extra=fields(code=exc.code))
        return state.answer
    return completion.text.strip()


def _log_findings(findings: list[tribunal.Finding], what: str) -> None:
    for finding in findings:
        level = logging.WARNING if finding.hard else logging.INFO
        log.log(
            level,
            "tribunal finding",
            extra=fields(code=finding.code, hard=finding.hard, detail=finding.detail, on=what),
        )
