"""Path 2 — the character reacts (seed 001 §2, §6; design §6).

    state → enricher → ei_calc → router → planner ⇄ agents → conversation_vector →
    responder → thinker → tribunal → salience → dispatcher → (continue | awaiting_user)

- `state`: the run's state from the event and the session; the stimulus through the one
  reader (`app.pipeline.stimulus`).
- `enricher`: the history through the one renderer and what the character knows about the
  user (`app.pipeline.recall`); `ei_calc`: the empathy switch (`app.pipeline.ei`).
- `router`, `planner ⇄ agents`: `app.pipeline.planning`.
- `conversation_vector`, `responder`, `thinker`, `tribunal`: `app.pipeline.answering`.
- `salience`: how much the answer matters and how the character feels after it — by
  default asked after delivery (`later`, issue 36), with the user's salience of the block
  (path 1's); the node asks it here only where `salience_after_delivery` is off;
  `dispatcher`: the one writer (`app.pipeline.dispatcher`).
- `router`: the offline rules decide where they are sure (`planning.sure_route`).

This module holds the run's own nodes and the node list; the two larger parts live in their
modules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from app.core.emotion import Emotion, copy_emotion
from app.memory.render import render_history
from app.memory.state import queue_load_state
from app.memory.turns import ROLE_ASSISTANT, ROLE_USER, Turn
from app.pipeline import dispatcher, ei, path1
from app.pipeline.answering import conversation_vector, judge, mood_text, respond, think
from app.pipeline.context import NodeContext
from app.pipeline.graph import Node
from app.pipeline.planning import plan, route, wants_planner, wants_router
from app.pipeline.recall import recall, recall_text, triggered_lore
from app.pipeline.schemas import Perception
from app.pipeline.state import Path2State
from app.pipeline.stimulus import read_stimulus, thought_level
from app.pipeline.vocabulary import UserPayload

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
        newest = svc.short_term.queue_recent(
            pipe, user_id, character_id, ctx.settings.short_term_memory_recent
        )
        results = await pipe.execute()
    state.turns, state.summary = retrieved(results)
    state.memories = newest(results)
    loaded = stored_state(results)
    state.request_turn = next(
        (t for t in reversed(state.turns) if t.role == ROLE_USER and t.turn_id == state.turn_id),
        None,
    )
    state.previous_answer = next(
        (t.content for t in reversed(state.turns) if t.role == ROLE_ASSISTANT and t.has_content), ""
    )
    state.stimulus = read_stimulus(state.payload, state.request_turn)
    if state.source == "user":
        state.user = ei.perceived_user(state.payload) or _stored_emotion(state.request_turn)
    language = state.payload.language if isinstance(state.payload, UserPayload) else ""
    state.expected_language = language or ctx.language
    state.thought_arousal = thought_level(state.payload)
    state.state = loaded


def _stored_emotion(turn: Turn | None) -> Emotion | None:
    """The user's perceived state as the user turn stored it (an event without one)."""
    return None if turn is None else copy_emotion(turn, Emotion())


async def enrich(ctx: NodeContext, state: Path2State) -> None:
    """The session context: history through the one renderer (summary and short-term memory
    came with the state node's snapshot), the lorebook entries the conversation triggers,
    and what the character knows about the user from long-term memory, relevant to this
    run's words (searched here when no router runs, else beside the router's model call)."""
    state.history = render_history(
        state.turns, ctx.settings, character_name=ctx.character.name, language=ctx.language
    )
    ctx.share_session(state.summary, state.history)
    state.lore = await triggered_lore(ctx, state)
    if not wants_router(state):  # otherwise the router's node searches beside its call
        state.known = await recall(ctx, state.user_id, state.character_id, recall_text(state))


async def ei_calc(ctx: NodeContext, state: Path2State) -> None:
    state.state = ei.character_state(
        state.state,
        baseline=ctx.character.baseline,
        source=state.source,
        now=ctx.services.clock(),
        settings=ctx.settings,
        user=state.user,
        thought_level=state.thought_arousal,
    )


async def salience(ctx: NodeContext, state: Path2State) -> None:
    """Before the commit only where `salience_after_delivery` is off; else `later` asks it
    once the answer is delivered."""
    if not ctx.settings.salience_after_delivery:
        await ask_salience(ctx, state)


async def ask_salience(ctx: NodeContext, state: Path2State) -> None:
    b = ctx.blocks
    stimulus = state.stimulus
    said = [line for r in state.results for line in r.said]
    state.salience = await ctx.ask_struct(
        "salience_character",
        [
            (b.request, stimulus.text if stimulus.kind in ("user", "retry") else ""),
            (b.thought, stimulus.text if stimulus.kind == "thought" else ""),
            (b.actions, "\n".join(f"- {line}" for line in said)),
            (b.mood, mood_text(state)),
            (b.answer, state.answer),
        ],
    )


async def dispatch(ctx: NodeContext, state: Path2State) -> None:
    await dispatcher.write_character_turn(ctx, state)


def wants_user_salience(ctx: NodeContext, state: Path2State) -> bool:
    """The user's salience of the block path 1 perceived is asked here, once: the turn's
    first run, for the user's own words, where `user_salience_after_delivery` is on."""
    return (
        ctx.settings.user_salience_after_delivery
        and state.source == "user"
        and state.trigger_count == 0
        and state.request_turn is not None
    )


async def user_salience(ctx: NodeContext, state: Path2State) -> None:
    """The user's salience (path 1's purpose and frame, the perception as the user turn
    stored it) and what it leaves: short-term entries and the promotion trigger
    (`dispatcher.write_user_salience`)."""
    turn = state.request_turn
    assert turn is not None
    perceived = Perception(
        emotion=turn.emotion,
        arousal=turn.arousal,
        intentions=list(turn.intentions),
        core=turn.core,
    )
    history = state.history or render_history(
        state.turns, ctx.settings, character_name=ctx.character.name, language=ctx.language
    )
    value = await path1.ask_salience(ctx, state.summary or "", state.memories, history, perceived)
    await dispatcher.write_user_salience(ctx, state, turn, value)


def later(ctx: NodeContext, state: Path2State) -> Callable[[], Awaitable[None]] | None:
    """What runs after delivery (issue 36): the character's salience of the answer this run
    stored, and what it leaves for the next turns (`dispatcher.write_character_salience`).
    None: the setting is off (it ran before the commit) or this run stored nothing new."""
    users = wants_user_salience(ctx, state)
    characters = ctx.settings.salience_after_delivery and state.stored is not None
    if not users and not characters:
        return None

    async def characters_salience() -> None:
        await ask_salience(ctx, state)
        await dispatcher.write_character_salience(ctx, state)

    async def salience_after_delivery() -> None:
        if (
            users
            and characters
            and await ctx.gateway.parallel("salience", "salience_character") > 1
        ):
            # Independent of each other: at once where the server serves several requests
            # (its slots, `app.llm.slots`); one after the other where it has one.
            outcomes = await asyncio.gather(
                user_salience(ctx, state), characters_salience(), return_exceptions=True
            )
            for outcome in outcomes:
                if isinstance(outcome, BaseException):
                    raise outcome
            return
        if users:
            await user_salience(ctx, state)
        if characters:
            await characters_salience()

    return salience_after_delivery


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
