"""Consolidation: one promotion trigger → checked changes to long-term memory (design §3a).

One structured model call per trigger (purpose `consolidation`, schema
`app.pipeline.schemas.Consolidation`, neutral answer: nothing to keep). Its frame holds only
the user's own words (the trigger's block), the segments the salience singled out, and the
pair's known memories related to them (with ids, so the model can refresh or correct one).
Assistant text never enters it.

Then local checks, per proposed change (`check`):

- `none`, an empty text: nothing;
- **support**: every content word of the text must occur in the user's own words — the
  trigger's block, and for a correction also the memory it corrects (itself grounded in
  earlier user messages or written by the user). Otherwise the change is dropped and logged:
  a statement the character (or the model) made up never becomes a fact about the user;
- `refresh`/`supersede` must name a memory that was shown; otherwise it counts as new (the
  store still refreshes an identical live memory instead of duplicating it);
- a text longer than `memory_budget_chars` is dropped (it could never be shown whole);
- `kind` outside the known kinds becomes `fact`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from app.core.clock import zone_named
from app.core.log import fields
from app.memory.long_term import DEFAULT_KIND, KINDS, Change, Memory, memory_line
from app.memory.pixie_queue import Trigger
from app.memory.words import unsupported_words
from app.pipeline.context import NodeContext
from app.pipeline.prompts import Blocks, frame
from app.pipeline.schemas import Consolidation, MemoryChange

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Dropped:
    text: str
    reason: str
    missing: tuple[str, ...] = ()


DROPPED = {
    "unsupported": "memory dropped: not supported by the user's own words",
    "too_long": "memory dropped: longer than memory_budget_chars, it could never be shown",
}


def consolidation_frame(
    blocks: Blocks, trigger: Trigger, known: Sequence[Memory], zone: object
) -> str:
    return frame(
        [
            (blocks.said, trigger.text),
            (blocks.salient, "\n".join(f"- {s}" for s in trigger.segments)),
            (blocks.known, "\n".join(f"[{m.memory_id}] {memory_line(m, zone)[2:]}" for m in known)),
        ]
    )


def check(
    answer: Consolidation, trigger: Trigger, known: Sequence[Memory], *, max_chars: int
) -> tuple[list[Change], list[Dropped]]:
    """The proposed changes that pass the local checks, and the dropped ones with why."""
    by_id = {m.memory_id: m for m in known}
    changes: list[Change] = []
    dropped: list[Dropped] = []
    for proposal in answer.memories:
        text = " ".join(proposal.text.split())
        if proposal.action == "none" or not text:
            continue
        if len(text) > max_chars:  # it could never be shown (memory_budget_chars)
            dropped.append(Dropped(text, "too_long"))
            continue
        target = by_id.get(proposal.memory_id.strip())
        action = proposal.action
        if action in ("refresh", "supersede") and target is None:
            action = "remember"  # names nothing shown: judged as a new statement
        ground = trigger.text
        if action == "supersede" and target is not None:
            ground = f"{trigger.text}\n{target.text}"
        missing = unsupported_words(text, ground)
        if missing:
            dropped.append(Dropped(text, "unsupported", tuple(missing)))
            continue
        changes.append(
            Change(
                action=action,
                text=text,
                kind=_kind(proposal),
                importance=trigger.importance,
                memory_id=target.memory_id if target is not None else "",
            )
        )
    return changes, dropped


def _kind(proposal: MemoryChange) -> str:
    kind = proposal.kind.strip().lower()
    return kind if kind in KINDS else DEFAULT_KIND


async def consolidate(ctx: NodeContext, trigger: Trigger, known: Sequence[Memory]) -> list[Change]:
    """One model call and the local checks; raises the gateway's `ModelError`."""
    zone = zone_named(ctx.settings.timezone)
    answer: Consolidation = await ctx.ask_struct(
        "consolidation", consolidation_frame(ctx.blocks, trigger, known, zone)
    )
    changes, dropped = check(answer, trigger, known, max_chars=ctx.settings.memory_budget_chars)
    for item in dropped:
        log.warning(
            DROPPED[item.reason],
            extra=fields(
                trigger_id=trigger.trigger_id,
                turn_id=trigger.turn_id,
                text=item.text,
                reason=item.reason,
                missing=list(item.missing),
                limit="memory_budget_chars" if item.reason == "too_long" else None,
            ),
        )
    return changes
