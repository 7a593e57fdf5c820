"""The prompt budget (design §7, seed 004 §16.2): checked before any network call.

The input is estimated at `chars_per_token` characters per token (2 by default, on purpose
conservative: ordinary text makes 3.5–4 characters per token of a Llama or Qwen tokenizer).
Of the context window a share `budget_safety_margin` (15 %) stays free, and the output is
reserved in full (`max_tokens`). A request is sent when

    estimated input + reserved output <= window - ceil(window * margin)

or, where the estimate says no and the server counted the prompt with its own tokenizer
(`counted_input`, `app.llm.tokenizer`; issue 36, seed 004 §16.6), when

    counted input + reserved output <= window

— a count is no estimate, so the margin that covers the estimate's error does not apply; the
chat template's own tokens, which a count of the contents does not see, are added to it
(`template_tokens`). Otherwise it fails with `prompt_budget_exceeded` and nothing is cut:
the caller decides what to leave out, in whole units.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from decimal import Decimal

import msgspec

from app.llm.errors import ModelError
from app.llm.types import Message

# The tokens a chat template wraps around each message (Llama 3: a header of four tokens and
# the end-of-turn token; ChatML: three and the role), and once around the answer that
# follows: what a count of the messages' contents does not see. A little more than any
# template the servers ship takes.
TEMPLATE_TOKENS_PER_MESSAGE = 8


class Budget(msgspec.Struct, frozen=True):
    """The arithmetic of one request, kept for the trace. `counted_input`: the server's own
    count of the input (template tokens included), where it was asked; None: the estimate
    decides."""

    window: int
    margin_tokens: int
    reserved_output: int
    estimated_input: int
    counted_input: int | None = None

    @property
    def usable(self) -> int:
        return self.window - self.margin_tokens

    @property
    def needed(self) -> int:
        counted = self.counted_input
        return (self.estimated_input if counted is None else counted) + self.reserved_output

    @property
    def limit(self) -> int:
        """What `needed` must stay within: the usable window for the estimate, the whole
        window for a count."""
        return self.usable if self.counted_input is None else self.window

    @property
    def fits(self) -> bool:
        return self.needed <= self.limit

    @property
    def worth_counting(self) -> bool:
        """Would the server's count change the answer? Only where the estimate refuses a
        prompt whose output reserve alone is not what is too big."""
        return self.counted_input is None and not self.fits and self.reserved_output <= self.usable

    def as_dict(self) -> dict[str, int | bool | None]:
        return {
            "window": self.window,
            "margin_tokens": self.margin_tokens,
            "reserved_output": self.reserved_output,
            "estimated_input": self.estimated_input,
            "counted_input": self.counted_input,
            "usable": self.usable,
            "fits": self.fits,
        }


def estimate_tokens(messages: Sequence[Message], chars_per_token: float) -> int:
    """Tokens of the input by the chars-per-token rule, rounded up."""
    chars = sum(len(message["content"]) for message in messages)
    return math.ceil(chars / chars_per_token)


def template_tokens(messages: int) -> int:
    """The chat template's tokens around `messages` messages and the answer's start."""
    return TEMPLATE_TOKENS_PER_MESSAGE * (messages + 1)


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
    """The budget of one request by the estimate, not yet judged (`check`; `Budget.fits`):
    also for a caller that sizes its own requests in whole units (the journal's parts)."""
    return Budget(
        window=window,
        margin_tokens=margin_tokens(window, margin),
        reserved_output=max_tokens,
        estimated_input=estimate_tokens(messages, chars_per_token),
    )


def check(budget: Budget, *, chars_per_token: float, margin: float) -> Budget:
    """`budget` when it fits; raises `ModelError` when not."""
    if budget.reserved_output > budget.usable:
        raise ModelError(
            "output_limit_unsupported",
            f"max_tokens {budget.reserved_output} alone exceeds the usable window of "
            f"{budget.usable} tokens (window {budget.window}, budget_safety_margin {margin})",
        )
    if budget.fits:
        return budget
    if budget.counted_input is None:
        raise ModelError(
            "prompt_budget_exceeded",
            f"estimated input {budget.estimated_input} + reserved output "
            f"{budget.reserved_output} = {budget.needed} tokens > usable {budget.usable} of "
            f"window {budget.window} (budget_safety_margin {margin}, chars_per_token "
            f"{chars_per_token}); nothing was cut",
        )
    raise ModelError(
        "prompt_budget_exceeded",
        f"input {budget.counted_input} (the server's tokenizer, chat template included) + "
        f"reserved output {budget.reserved_output} = {budget.needed} tokens > window "
        f"{budget.window}; nothing was cut",
    )


def plan(
    messages: Sequence[Message],
    *,
    window: int,
    max_tokens: int,
    chars_per_token: float,
    margin: float,
) -> Budget:
    """The budget of one request by the estimate; raises `ModelError` when it does not fit."""
    budget = measure(
        messages,
        window=window,
        max_tokens=max_tokens,
        chars_per_token=chars_per_token,
        margin=margin,
    )
    return check(budget, chars_per_token=chars_per_token, margin=margin)


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
