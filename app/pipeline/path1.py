"""Path 1 — the user wrote (seed 001 §2, design §6).

    state → perception → enricher → ei_calc → salience → dispatcher → (user event)

Two model calls: perception and salience. The block is perceived **as one**: the history
shows it as the newest USER line (its messages joined by newlines), so the model reads it in
its context. The session turn is written once, complete, by the dispatcher at the end; the
perceived EI dimensions go into the user event's payload for path 2.
"""

from __future__ import annotations

from app.memory.render import render_history
from app.memory.turns import ROLE_USER, Turn
from app.pipeline import dispatcher, ei
from app.pipeline.context import NodeContext
from app.pipeline.graph import Node
from app.pipeline.prompts import frame
from app.pipeline.schemas import Perception
from app.pipeline.state import Path1State
from app.pipeline.vocabulary import Path1Result


async def load_session(ctx: NodeContext, state: Path1State) -> None:
    """Create the state from the session: turns and summary, and the history through the one
    renderer with the block as its newest USER line."""
    svc = ctx.services
    state.turns, state.summary = await svc.memory.retrieve(state.user_id, state.character_id)
    state.history = render_history(
        [*state.turns, block_turn(state)],
        ctx.settings,
        character_name=ctx.character.name,
        language=ctx.language,
    )


def block_turn(state: Path1State) -> Turn:
    """The block as the user turn it will become (shown to the model before it is stored)."""
    return Turn(
        turn_id=state.turn_id,
        role=ROLE_USER,
        content=state.text,
        time=state.said_at,
        message_ids=list(state.message_ids),
    )


async def perceive(ctx: NodeContext, state: Path1State) -> None:
    # The history block comes last: its newest USER line is the block to perceive.
    b = ctx.blocks
    state.perception = await ctx.ask_struct(
        "perception", frame([(b.summary, state.summary), (b.history, state.history)])
    )


async def enrich(ctx: NodeContext, state: Path1State) -> None:
    """The rest of the session context: the newest short-term memory entries."""
    state.memories = await ctx.services.short_term.recent(
        state.user_id, state.character_id, ctx.settings.short_term_memory_recent
    )


async def ei_calc(ctx: NodeContext, state: Path1State) -> None:
    state.user = ei.user_emotion(state.perception)


async def salience(ctx: NodeContext, state: Path1State) -> None:
    b = ctx.blocks
    state.salience = await ctx.ask_struct(
        "salience",
        frame(
            [
                (b.summary, state.summary),
                (b.memory, memory_text(state)),
                (b.history, state.history),
                (b.perceive, perceived_text(state.perception)),
            ]
        ),
    )


async def dispatch(ctx: NodeContext, state: Path1State) -> None:
    await dispatcher.write_user_turn(ctx, state)


def memory_text(state: Path1State) -> str:
    return "\n".join(f"- {entry.text}" for entry in state.memories)


def perceived_text(perception: Perception) -> str:
    """How the block came across, for the salience (the model's own perception, whole)."""
    parts = [
        f"emotion: {perception.emotion or '-'}",
        f"arousal: {perception.arousal if perception.arousal is not None else '-'}",
        f"intentions: {', '.join(perception.intentions) or '-'}",
        f"core: {perception.core or '-'}",
    ]
    return "\n".join(parts)


PATH1: tuple[Node[Path1State], ...] = (
    Node("state", load_session),
    Node("perception", perceive),
    Node("enricher", enrich),
    Node("ei_calc", ei_calc),
    Node("salience", salience),
    Node("dispatcher", dispatch),
)


def result_of(state: Path1State) -> Path1Result:
    """What path 1 gives the user event: the nine EI dimensions and the language."""
    return Path1Result(perceived=state.user, language=state.perception.language.strip().lower())
