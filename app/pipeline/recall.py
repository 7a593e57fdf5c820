"""What the character knows about the user, for path 2: the long-term memories relevant to a
run's words (SPEC §3a), searched by the enricher — or beside the router's model call when a
router runs — and shown to the responder and the thinker."""

from __future__ import annotations

from app.core.clock import zone_named
from app.memory.long_term import Memory, memory_line, within_budget
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
    ranked = await ctx.services.long_term.relevant(user_id, character_id, text,
                                                   top_k=settings.memory_top_k, now=now)
    known = within_budget(ranked, zone_named(settings.timezone), settings.memory_budget_chars)
    ctx.services.memories_used([m.memory_id for m in known], now)
    return known


def known_text(ctx: NodeContext, state: Path2State) -> str:
    zone = zone_named(ctx.settings.timezone)
    return "\n".join(memory_line(m, zone) for m in state.known)
