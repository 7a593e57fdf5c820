"""What the character knows, for path 2: about the user, the long-term memories relevant to a
run's words (design §3a), searched by the enricher — or beside the router's model call when a
router runs — and shown to the responder and the thinker; about its own world, the entries of
its lorebook the conversation triggers (design §11, `app.characters.lore`), for the responder."""

from __future__ import annotations

import asyncio

from app.characters import lore
from app.core.clock import zone_named
from app.memory.long_term import Memory, memory_line, within_budget
from app.memory.turns import ROLE_ASSISTANT
from app.pipeline.context import NodeContext
from app.pipeline.state import Path2State


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
    ranked = await ctx.services.long_term.relevant(
        user_id, character_id, text, top_k=settings.memory_top_k, now=now
    )
    known = within_budget(ranked, zone_named(settings.timezone), settings.memory_budget_chars)
    ctx.services.memories_used([m.memory_id for m in known], now)
    return known


def known_text(ctx: NodeContext, state: Path2State) -> str:
    zone = zone_named(ctx.settings.timezone)
    return "\n".join(memory_line(m, zone) for m in state.known)


async def triggered_lore(ctx: NodeContext, state: Path2State) -> list[str]:
    """`lore_lines`, in a worker thread for a book of more than `lore.OFF_LOOP_KEYS` keys and
    entries in all (its size, not its entry count: one entry may hold the keys of many;
    bench/lore.py)."""
    book = ctx.character.lore
    if book is not None and book.size > lore.OFF_LOOP_KEYS:
        return await asyncio.to_thread(lore_lines, ctx, state)
    return lore_lines(ctx, state)


def lore_lines(ctx: NodeContext, state: Path2State) -> list[str]:
    """The lorebook entries the conversation triggers (its recent turns and what this run
    reacts to), within `lore_budget_chars`, each as one item of the frame's block ("- " and
    its lines indented: an entry's text never starts a line of the frame)."""
    book = ctx.character.lore
    if book is None:
        return []
    recent = [turn.content for turn in state.turns if turn.content]
    if state.stimulus.kind != "user":  # a user's words are the newest turn already
        recent += [text for text in (state.stimulus.text, state.stimulus.intent) if text]
    answers = sum(1 for turn in state.turns if turn.role == ROLE_ASSISTANT)
    chosen = lore.triggered(book, recent, character_turns=answers)
    budget = lore.book_budget(book, ctx.settings.lore_budget_chars, ctx.settings.chars_per_token)
    kept = lore.within_budget(chosen, budget, character_id=ctx.character.id)
    return [
        "- " + ctx.character.for_prompt(entry.content).strip().replace("\n", "\n  ")
        for entry in kept
    ]
