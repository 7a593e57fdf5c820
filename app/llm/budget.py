"""The prompt budget (design §7, seed 004 §16.2): checked before any network call.

The input is estimated at `chars_per_token` characters per token (2 by default, on purpose
conservative: no model tokenizer, no false precision). Of the context window a share
`budget_safety_margin` (15 %) stays free, and the output is reserved in full (`max_tokens`).
A request is sent only when

    estimated input + reserved output <= window - ceil(window * margin)

Otherwise it fails with `prompt_budget_exceeded` and nothing is cut: the caller decides
what to leave out, in whole units.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from decimal import Decimal

import msgspec

from app.llm.errors import ModelError
from app.llm.types import Message


class Budget(msgspec.Struct, frozen=True):
    """The arithmetic of one request, kept for the trace."""

    window: int
    margin_tokens: int
    reserved_output: int
    estimated_input: int

    @property
    def usable(self) -> int:
        return self.window - self.margin_tokens

    @property
    def needed(self) -> int:
        return self.estimated_input + self.reserved_output

    @property
    def fits(self) -> bool:
        return self.needed <= self.usable

    def as_dict(self) -> dict[str, int | bool]:
        return {
            "window": self.window,
            "margin_tokens": self.margin_tokens,
            "reserved_output": self.reserved_output,
            "estimated_input": self.estimated_input,
            "usable": self.usable,
            "fits": self.fits,
        }


def estimate_tokens(messages: Sequence[Message], chars_per_token: float) -> int:
    """Tokens of the input by the chars-per-token rule, rounded up."""
    chars = sum(len(message["content"]) for message in messages)
    return math.ceil(chars / chars_per_token)


@functools.lru_cache(maxsize=64)
def margin_tokens(window: int, margin: float) -> int:
    # Decimal: 8192 * 0.15 must be 1228.8 -> 1229, not a float that rounds either way.
    return math.ceil(Decimal(window) * Decimal(str(margin)))


def measure(
    messages: Sequence[Message],
    *,
    window: int,
    max_tokens: int,
    chars_per_token: float,
    margin: float,
) -> Budget:
    """The budget of one request, whether it fits or not (`Budget.fits`): for a caller that
    sizes its own requests in whole units (the journal's parts); `plan` refuses instead."""
    return Budget(
        window=window,
        margin_tokens=margin_tokens(window, margin),
        reserved_output=max_tokens,
        estimated_input=estimate_tokens(messages, chars_per_token),
    )


def plan(
    messages: Sequence[Message],
    *,
    window: int,
    max_tokens: int,
    chars_per_token: float,
    margin: float,
) -> Budget:
    """The budget of one request; raises `ModelError` when it does not fit."""
    budget = measure(
        messages,
        window=window,
        max_tokens=max_tokens,
        chars_per_token=chars_per_token,
        margin=margin,
    )
    if budget.reserved_output > budget.usable:
        raise ModelError(
            "output_limit_unsupported",
            f"max_tokens {max_tokens} alone exceeds the usable window of {budget.usable} "
            f"tokens (window {window}, budget_safety_margin {margin})",
        )
    if not budget.fits:
        raise ModelError(
            "prompt_budget_exceeded",
            f"estimated input {budget.estimated_input} + reserved output {max_tokens} = "
            f"{budget.needed} tokens > usable {budget.usable} of window {window} "
            f"(budget_safety_margin {margin}, chars_per_token {chars_per_token}); "
            f"nothing was cut",
        )
    return budget


# A user message appears up to twice in one prompt of the pipelines (salience: the history
# and the request; thinker: the request and the answer), next to the character's system
# prompt and the frame's other blocks.
MESSAGE_COPIES_PER_PROMPT = 2
PROMPT_OVERHEAD_TOKENS = 1000


def message_chars_limit(
    *, window: int, reserved_output: int, chars_per_token: float, margin: float
) -> int:
    """The longest message whose prompts can fit `window` at all: beyond it every turn would
    fail with `prompt_budget_exceeded`, so the message is refused when it is sent."""
    room = window - margin_tokens(window, margin) - reserved_output - PROMPT_OVERHEAD_TOKENS
    return max(0, math.floor(room / MESSAGE_COPIES_PER_PROMPT * chars_per_token))
