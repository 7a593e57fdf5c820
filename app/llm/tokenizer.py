"""The server's own token count, for the budget (issue 36 item 6; seed 004 §16.6 left "a
tokenizer per model family" open): llama.cpp's and vLLM's `POST /tokenize`.

`Tokenizers.count(provider, messages)` is asked by the budget (`app.llm.window`) **only where
the estimate refuses a prompt** (`Budget.worth_counting`). The estimate at `chars_per_token`
(2 by default) counts ordinary text high — a Llama or Qwen tokenizer makes 3.5–4 characters
per token — so a prompt it admits needs no second opinion, and the turn's common case costs
no request at all; a prompt it refuses may still fit, and the server's count decides then
(one request, milliseconds on a local server). A count per call would put a round trip
before every model call for an answer that is almost always the same.

- Whether an endpoint has a tokenizer is learnt from its first answer and kept for
  `model_metadata_ttl` (per provider object, as the window is: a switch starts afresh): a
  server without one (404) is not asked again meanwhile.
- A tokenizer that is down (no connection, a timeout, a 5xx, an answer without a count)
  never fails a call: the estimate with its margin decides, as it would without one, and a
  warning says so ("tokenizer unavailable; the budget falls back to the estimate").
- Never for a remote provider: the prompt would leave this machine once more, outside the
  call's egress gate and the user's egress log; its budget stays the estimate's. Nor for the
  offline model, which has no tokens to count.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from app.core import log as logctx
from app.core.settings import Settings
from app.llm.budget import template_tokens
from app.llm.errors import ModelError
from app.llm.providers import Provider
from app.llm.types import Message

log = logging.getLogger(__name__)


class Tokenizers:
    """What each provider's server answered to `/tokenize` (offers one or not, and when)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._offers: dict[int, tuple[bool, float]] = {}

    def offers(self, provider: Provider) -> bool | None:
        """Does the provider's server count tokens (None: not asked yet, or long ago)?"""
        known = self._offers.get(id(provider))
        if known is None or time.monotonic() - known[1] >= self.settings.model_metadata_ttl:
            return None
        return known[0]

    async def count(self, provider: Provider, messages: Sequence[Message]) -> int | None:
        """The input's tokens by the server's tokenizer, the chat template's included; None
        where there is none to ask or it failed (the estimate decides then)."""
        if provider.offline or provider.remote or self.offers(provider) is False:
            return None
        text = "\n".join(message["content"] for message in messages)
        try:
            counted = await provider.count_tokens(text)
        except ModelError as exc:
            log.warning(
                "tokenizer unavailable; the budget falls back to the estimate",
                extra=logctx.fields(
                    provider=provider.name,
                    url=provider.url,
                    error=exc.code,
                    message=exc.message,
                    chars_per_token=self.settings.chars_per_token,
                    budget_safety_margin=self.settings.budget_safety_margin,
                ),
            )
            return None
        if self.offers(provider) is None:
            log.info(
                "model server tokenizer probed",
                extra=logctx.fields(
                    provider=provider.name, url=provider.url, offers=counted is not None
                ),
            )
        self._offers[id(provider)] = (counted is not None, time.monotonic())
        if counted is None:
            return None
        return counted + template_tokens(len(messages))
