"""Path 2 — the character reacts (seed 001 §2, §6; SPEC §6).

    state → enricher → ei_calc → router → planner ⇄ agents → conversation_vector →
    responder → thinker → tribunal → salience → dispatcher → (continue | awaiting_user)

- `state`: the run's state from the event and the session; the stimulus through the one
  reader (`app.pipeline.stimulus`).
- `router` runs for the user's words and for a commitment the character made; an own
  thought, a wish to say more and a retry ask no agent (a retry must not repeat an action).
- `planner` runs when the router asked for an action or the user answers an agent's open
  question; agents are called star-shaped, each returning to the planner, at most
  `planner_max_steps` steps. An agent's question stops the plan; the rest of it waits in the
  question's context.
- `responder` speaks from the character's persona; an impulse reaches it as its own thought
  in its own block, never as something the user said.
- `thinker`: does the answer meet the request? One regeneration; a second miss delivers the
  answer and asks for a `continue` retry that inherits the `turn_id`.
- `tribunal`: validators and one corrector rewrite (`app.pipeline.tribunal`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import msgspec

from app.emotion import Emotion, copy_emotion
from app.llm.errors import ModelError
from app.log import fields
from app.clock import zone_named
from app.memory.long_term import Memory, memory_line, within_budget
from app.memory.render import render_history
from app.memory.state import queue_load_state
from app.memory.turns import ROLE_ASSISTANT, ROLE_USER, Turn
from app.pipeline import dispatcher, ei, tribunal
from app.pipeline.agents import AGENTS
from app.pipeline.context import NodeContext
from app.pipeline.graph import Node
from app.pipeline.prompts import frame, language_of, tasks_for
from app.pipeline.schemas import AGENTS as AGENT_NAMES
from app.pipeline.schemas import Plan, PlanStep, Verdict
from app.pipeline.state import AgentResult, Path2State
from app.pipeline.stimulus import read_stimulus, thought_level
from app.pipeline.vocabulary import TurnRejected

log = logging.getLogger(__name__)

REJECTED = "tribunal_rejected"


# --- state, enricher, EI calc ------------------------------------------------------------------

async def load(ctx: NodeContext, state: Path2State) -> None:
    """The run's state from the event and one snapshot of the pair: turns, summary, the
    character's state and the newest short-term memory entries (for the enricher, which
    runs next), read in one transaction — one round trip."""
    svc = ctx.services
    user_id, character_id = state.user_id, state.character_id
    async with svc.redis.pipeline(transaction=True) as pipe:
        retrieved = svc.memory.queue_retrieve(pipe, user_id, character_id)
        stored_state = queue_load_state(pipe, user_id, character_id)
        newest = svc.short_term.queue_recent(pipe, user_id, character_id,
                                             ctx.settings.short_term_memory_recent)
        results = await pipe.execute()
    state.turns, state.summary = retrieved(results)
    state.memories = newest(results)
    loaded = stored_state(results)
    state.request_turn = next((t for t in reversed(state.turns)
                               if t.role == ROLE_USER and t.turn_id == state.turn_id), None)
    state.previous_answer = next((t.content for t in reversed(state.turns)
                                  if t.role == ROLE_ASSISTANT and t.has_content), "")
    state.stimulus = read_stimulus("continue" if state.origin == "continue" else "message",
                                   state.payload, state.request_turn)
    if state.source == "user":
        state.user = ei.from_payload(state.payload) or _stored_emotion(state.request_turn)
    state.expected_language = str(state.payload.get("language") or "") or ctx.language
    state.thought_arousal = thought_level(state.payload)
    state.state = loaded


def _stored_emotion(turn: Turn | None) -> Emotion | None:
    """The user's perceived state as the user turn stored it (an event without one)."""
    return None if turn is None else copy_emotion(turn, Emotion())


async def enrich(ctx: NodeContext, state: Path2State) -> None:
    """The session context: history through the one renderer (summary and short-term memory
    came with the state node's snapshot), and what the character knows about the user from
    long-term memory, relevant to this run's words (searched here when no router runs, else
    beside the router's model call)."""
    state.history = render_history(state.turns, ctx.settings, character_name=ctx.character.name,
                                   language=ctx.language)
    if not wants_router(state):  # otherwise the router's node searches beside its call
        state.known = await recall(ctx, state.user_id, state.character_id, recall_text(state))


def recall_text(state: Path2State) -> str:
    """The words long-term memory is searched with: the user's block, the character's own
    thought, or what it wanted to say."""
    stimulus = state.stimulus
    parts = [stimulus.text, stimulus.intent]
    if state.request_turn is not None and stimulus.kind != "user":
        parts.append(state.request_turn.content)
    return "\n".join(part for part in parts if part)


async def recall(ctx: NodeContext, user_id: str, character_id: str, text: str) -> list[Memory]:
    """The `memory_top_k` most relevant live memories within `memory_budget_chars` (whole
    memories only). Their `last_used_at` is written by the Pixie worker, off the turn's
    path (a usage mark is not worth a disk sync while the user waits)."""
    settings = ctx.settings
    now = ctx.services.clock()
    ranked = await ctx.services.long_term.relevant(user_id, character_id, text,
                                                   top_k=settings.memory_top_k, now=now)
    known = within_budget(ranked, zone_named(settings.timezone), settings.memory_budget_chars)
    ctx.services.memories_used([m.memory_id for m in known], now)
    return known


def known_text(ctx: NodeContext, state: Path2State) -> str:
    zone = zone_named(ctx.settings.timezone)
    return "\n".join(memory_line(m, zone) for m in state.known)


async def ei_calc(ctx: NodeContext, state: Path2State) -> None:
    state.state = ei.character_state(
        state.state, baseline=ctx.character.baseline, source=state.source,
        now=ctx.services.clock(), settings=ctx.settings, user=state.user,
        thought_level=state.thought_arousal)


# --- router, planner ⇄ agents ------------------------------------------------------------------

def wants_router(state: Path2State) -> bool:
    return state.stimulus.kind == "user" or state.stimulus.commitment


async def route(ctx: NodeContext, state: Path2State) -> None:
    """The router's call, with the long-term memory search beside it (the search runs on a
    database thread while the model answers: it adds nothing to the turn's time)."""
    b = ctx.blocks
    routed, known = await asyncio.gather(
        ctx.ask_struct("router", frame([
            (b.summary, state.summary),
            (b.pending, str(state.pending.get("question", "")) if state.pending else ""),
            (b.intent, state.stimulus.intent if state.stimulus.commitment else ""),
            (b.history, state.history)])),
        recall(ctx, state.user_id, state.character_id, recall_text(state)),
        return_exceptions=True)  # both finish; then the first failure counts
    for outcome in (routed, known):
        if isinstance(outcome, BaseException):
            raise outcome
    state.route, state.known = routed, known


def resuming(state: Path2State) -> bool:
    return state.pending is not None and state.route.answers_pending


def wants_planner(state: Path2State) -> bool:
    return resuming(state) or (state.route.needs_action and bool(state.route.agents))


async def plan(ctx: NodeContext, state: Path2State) -> None:
    """The planner: star-shaped agent calls, bounded by `planner_max_steps`."""
    steps: list[PlanStep] = []
    if resuming(state):
        assert state.pending is not None
        agent = str(state.pending.get("agent", ""))
        steps = _remaining(state.pending)
        if agent in AGENTS:
            result = await _run_step(ctx, state, PlanStep(agent=agent, task=state.stimulus.text),
                                     state.pending)
            if result.outcome == "follow_up":  # asked again: the rest keeps waiting
                result.context["remaining"] = msgspec.to_builtins(steps)
                return
    if state.route.needs_action and state.route.agents and not steps:
        steps = await _plan_steps(ctx, state)
    limit = ctx.settings.planner_max_steps
    if len(steps) > limit:
        log.warning("planner_max_steps dropped agent steps", extra=fields(
            limit="planner_max_steps", max_steps=limit, planned=len(steps),
            dropped=[s.agent for s in steps[limit:]]))
        steps = steps[:limit]
    for index, step in enumerate(steps):
        result = await _run_step(ctx, state, step, None)
        if result.outcome == "follow_up":
            result.context["remaining"] = msgspec.to_builtins(steps[index + 1:])
            break


async def _plan_steps(ctx: NodeContext, state: Path2State) -> list[PlanStep]:
    request = state.stimulus.intent if state.stimulus.commitment else state.stimulus.text
    agents = [a for a in dict.fromkeys(state.route.agents) if a in AGENTS]
    if len(agents) == 1:
        # One agent: the whole request is its task; no planning call needed.
        return [PlanStep(agent=agents[0], task=request)]
    b = ctx.blocks
    planned: Plan = await ctx.ask_struct("planner", frame([
        (b.history, state.history), (b.request, request)]))
    steps = [s for s in planned.steps if s.agent in AGENTS and s.task.strip()]
    if not steps:
        log.warning("router asked for an action, the planner planned none",
                    extra=fields(agents=agents))
    return steps


async def _run_step(ctx: NodeContext, state: Path2State, step: PlanStep,
                    pending: dict | None) -> AgentResult:
    await ctx.stage(step.agent)
    try:
        result = await AGENTS[step.agent](ctx, state, step.task, pending)
    except ModelError:
        raise
    except Exception:  # noqa: BLE001 - an agent's defect is its error, not the turn's end
        log.exception("agent failed", extra=fields(agent=step.agent))
        result = AgentResult(agent=step.agent, task=step.task, outcome="error",
                             said=[AGENT_FAILED[language_of(ctx.language)]])
    state.results.append(result)
    log.info("agent step", extra=fields(agent=step.agent, outcome=result.outcome))
    return result


# What the responder is told when an agent broke down (so the character never claims success).
AGENT_FAILED = {
    "de": "Das hat nicht geklappt: Beim Ausführen ist ein Fehler passiert.",
    "en": "That did not work: something went wrong while doing it.",
}


def _remaining(pending: dict) -> list[PlanStep]:
    try:
        steps = msgspec.convert(pending.get("remaining") or [], list[PlanStep])
    except msgspec.ValidationError:
        return []
    return [s for s in steps if s.agent in AGENT_NAMES]


# --- conversation vector, responder, thinker, tribunal --------------------------------------------

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
        trend = words["rising"] if delta > 0.1 else words["falling"] if delta < -0.1 \
            else words["steady"]
        parts.append(words["arousal"].format(trend=trend, first=arousals[0], last=arousals[-1]))
    if topics:
        parts.append(words["topics"].format(topics=", ".join(topics)))
    if users[-1].intentions:
        parts.append(words["intent"].format(intent=", ".join(users[-1].intentions)))
    state.vector = "\n".join(parts)


VECTOR_WORDS = {
    "de": {"arousal": "Erregung des Menschen: {trend} ({first:.2f} → {last:.2f})",
           "rising": "steigend", "falling": "fallend", "steady": "gleichbleibend",
           "topics": "Themen: {topics}", "intent": "Zuletzt wollte er: {intent}"},
    "en": {"arousal": "The person's arousal: {trend} ({first:.2f} → {last:.2f})",
           "rising": "rising", "falling": "falling", "steady": "steady",
           "topics": "Topics: {topics}", "intent": "Last they wanted: {intent}"},
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
    return frame([
        (b.summary, state.summary),
        (b.known, known_text(ctx, state)),
        (b.memory, "\n".join(f"- {m.text}" for m in state.memories)),
        (b.history, state.history),
        (b.vector, state.vector),
        (b.mood, mood_text(state)),
        (b.actions, "\n".join(f"- {line}" for line in said)),
        (b.question, question.question if question is not None else ""),
        (b.thought, stimulus.text if stimulus.kind == "thought" else ""),
        (b.retry, stimulus.reason if stimulus.kind == "retry" else ""),
        (b.task, task)])


def mood_text(state: Path2State) -> str:
    s = state.state
    parts = [f"emotion: {s.emotion}", f"arousal: {s.arousal:.2f}"]
    parts += [f"{name}: {value}" for name, value in (
        ("mode", s.mode), ("tone", s.tone), ("language_style", s.language_style),
        ("relationship_dynamic", s.relationship_dynamic)) if value]
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
    log.info("thinker: answer misses the request; one regeneration",
             extra=fields(reason=state.verdict.reason))
    state.answer = await _draft(ctx, state, regenerate=state.verdict.reason or "-")
    state.verdict = await _verdict(ctx, state)
    if state.verdict.misses_request:
        state.retry = True
        log.warning("thinker: the regenerated answer misses the request too; continue retry",
                    extra=fields(reason=state.verdict.reason))


async def _verdict(ctx: NodeContext, state: Path2State) -> Verdict:
    b = ctx.blocks
    stimulus = state.stimulus
    request = stimulus.text if stimulus.kind in ("user", "retry") else ""
    return await ctx.ask_struct("thinker", frame([
        (b.known, known_text(ctx, state)),
        (b.history, state.history),
        (b.request, request),
        (b.thought, stimulus.text if stimulus.kind == "thought" else ""),
        (b.intent, stimulus.intent if stimulus.kind == "continue" else ""),
        (b.question, state.question.question if state.question else ""),
        (b.answer, state.answer)]))


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


def _checker(ctx: NodeContext,
             state: Path2State) -> Callable[[str], list[tribunal.Finding]]:
    instructions = tribunal.instruction_sentences([ctx.services.prompts.system(
        "responder", ctx.language, persona=ctx.character.persona,
        character_name=ctx.character.name, interaction_hint=ctx.interaction_hint)])

    def check(text: str) -> list[tribunal.Finding]:
        return tribunal.validate(text, character_name=ctx.character.name,
                                 previous=state.previous_answer,
                                 expected_language=state.expected_language,
                                 instruction_parts=instructions)
    return check


async def _correct(ctx: NodeContext, state: Path2State,
                   findings: list[tribunal.Finding]) -> str:
    b = ctx.blocks
    try:
        completion = await ctx.ask("corrector", frame([
            (b.findings, "\n".join(f"- {f.code}: {f.detail}" for f in findings if f.hard)),
            (b.answer, state.answer)]))
    except ModelError as exc:
        log.warning("corrector failed; the answer goes on as it is",
                    extra=fields(code=exc.code))
        return state.answer
    return completion.text.strip()


def _log_findings(findings: list[tribunal.Finding], what: str) -> None:
    for finding in findings:
        level = logging.WARNING if finding.hard else logging.INFO
        log.log(level, "tribunal finding", extra=fields(
            code=finding.code, hard=finding.hard, detail=finding.detail, on=what))


# --- salience, dispatcher ----------------------------------------------------------------------

async def salience(ctx: NodeContext, state: Path2State) -> None:
    b = ctx.blocks
    stimulus = state.stimulus
    said = [line for r in state.results for line in r.said]
    state.salience = await ctx.ask_struct("salience_character", frame([
        (b.request, stimulus.text if stimulus.kind in ("user", "retry") else ""),
        (b.thought, stimulus.text if stimulus.kind == "thought" else ""),
        (b.actions, "\n".join(f"- {line}" for line in said)),
        (b.mood, mood_text(state)),
        (b.answer, state.answer)]))


async def dispatch(ctx: NodeContext, state: Path2State) -> None:
    await dispatcher.write_character_turn(ctx, state)


PATH2: tuple[Node[Path2State], ...] = (
    Node("state", load),
    Node("enricher", enrich),
    Node("ei_calc", ei_calc),
    Node("router", route, when=wants_router),
    Node("planner", plan, when=wants_planner),
    Node("conversation_vector", conversation_vector),
    Node("responder", respond),
    Node("thinker", think),
    Node("tribunal", judge),
    Node("salience", salience),
    Node("dispatcher", dispatch),
)
