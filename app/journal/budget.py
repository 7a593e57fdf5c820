"""The journal's budget (design §8, seed 004 §16.2), checked for the whole job before any call.

The journal needs a window of `journal_min_context` (32 768) tokens. A day with more than
`journal_day_max_messages` messages is refused (`prompt_budget_exceeded`). Every prompt of the
job — each stage-1 part and each stage-2 part of the fallback artifact, the largest stage 2
can get but for the model's own sourced notes — must fit with `journal_output_tokens`
reserved; a day too big for one prompt is cut into parts at line boundaries
(`app.journal.parts`), each sized by `measure`. The arithmetic is the gateway's
(`app.llm.budget`): one estimator, here and for the call itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import msgspec

from app.core import log as logctx
from app.core.settings import Settings
from app.llm import budget as budgeting
from app.llm.errors import ModelError
from app.llm.types import Message

log = logging.getLogger(__name__)


class Budget(msgspec.Struct, kw_only=True):
    """The job's budget as the draft's trace records it: the window, the margin (share and
    tokens), the reserved output and each prompt's estimated input, in tokens."""

    window: int
    margin: float
    margin_tokens: int
    reserved_output: int
    estimated_input: list[int]


def check_day(messages: int, settings: Settings) -> None:
    """The day cap: counted over every message of the selected conversations."""
    if messages > settings.journal_day_max_messages:
        log.warning(
            "journal day over the message cap",
            extra=logctx.fields(
                messages=messages,
                limit=settings.journal_day_max_messages,
                setting="journal_day_max_messages",
            ),
        )
        raise ModelError(
            "prompt_budget_exceeded",
            f"the day has {messages} messages; journal generation takes at most "
            f"{settings.journal_day_max_messages} (journal_day_max_messages); "
            f"nothing was cut",
        )


def check_window(window: int, settings: Settings) -> None:
    """Refuse a window the journal cannot use at all, before any prompt is sized in it:
    `model_context_too_small` below `journal_min_context`, `output_limit_unsupported` when
    `journal_output_tokens` alone exceed its usable part (an empty prompt asks exactly that:
    nothing else of it can fail)."""
    if window < settings.journal_min_context:
        raise ModelError(
            "model_context_too_small",
            f"journal generation needs a window of {settings.journal_min_context} "
            f"tokens (journal_min_context); the model has {window}",
        )
    budgeting.plan(
        [],
        window=window,
        max_tokens=settings.journal_output_tokens,
        chars_per_token=settings.chars_per_token,
        margin=settings.budget_safety_margin,
    )


def measure(window: int, prompt: Sequence[Message], settings: Settings) -> budgeting.Budget:
    """One prompt of the job in `window` with `journal_output_tokens` reserved, whether it
    fits or not (`.fits`): what `app.journal.parts` sizes a part by."""
    return budgeting.measure(
        prompt,
        window=window,
        max_tokens=settings.journal_output_tokens,
        chars_per_token=settings.chars_per_token,
        margin=settings.budget_safety_margin,
    )


def plan(window: int, prompts: Sequence[Sequence[Message]], settings: Settings) -> Budget:
    """The budget of the job's prompts in `window`; raises `ModelError` when one does not
    fit or the window is too small."""
    check_window(window, settings)
    budgets = [
        budgeting.plan(
            prompt,
            window=window,
            max_tokens=settings.journal_output_tokens,
            chars_per_token=settings.chars_per_token,
            margin=settings.budget_safety_margin,
        )
        for prompt in prompts
    ]
    biggest = max(budgets, key=lambda b: b.estimated_input)
    return Budget(
        window=window,
        margin=settings.budget_safety_margin,
        margin_tokens=biggest.margin_tokens,
        reserved_output=biggest.reserved_output,
        estimated_input=[b.estimated_input for b in budgets],
    )
