"""The context window of each provider and the plan of a call against it (the gateway's step 2).

- `ContextWindows.window(provider)`: the window and where it came from — the provider
  (cached `model_metadata_ttl`, also when it said nothing), a stale cache while the provider
  is down, else `llm_context`, else `model_metadata_unknown`.
- `ContextWindows.plan(provider, call, trace)`: window, the purpose's minimum window, then
  `app.llm.budget` — all before any network call of the answer; where the estimate refuses
  the prompt, the server's own count decides (`app.llm.tokenizer`).
- `check_fits(call, messages, settings)`: does a follow-up prompt (a repair or a corrective
  retry) still fit the window the call was planned with? A call the server's count admitted
  is judged by that count and the estimate of what the follow-up adds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import msgspec

from app.core import log as logctx
from app.core.settings import Settings
from app.llm import budget as budgeting
from app.llm.errors import ModelError
from app.llm.providers import Provider
from app.llm.tokenizer import Tokenizers
from app.llm.trace import Trace
from app.llm.types import Call, Message

log = logging.getLogger(__name__)

# Purposes that need a large window (seed 004 §16.2: journal generation needs 32K).
JOURNAL_PURPOSES = ("journal_reconstruct", "journal_generate")


class ContextWindows:
    """Windows per provider (keyed by the provider object: a switch starts afresh) and the
    minimum window per purpose."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.min_context: dict[str, int] = dict.fromkeys(
            JOURNAL_PURPOSES, settings.journal_min_context
        )
        # provider id -> (window or None when the provider does not say, fetched at)
        self._windows: dict[int, tuple[int | None, float]] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self.tokenizers = Tokenizers(settings)

    def cached(self, provider: Provider) -> int | None:
        """What the provider last said, without asking it (None: not asked, or silent)."""
        cached = self._windows.get(id(provider))
        return cached[0] if cached else None

    def known(self, provider: Provider) -> int | None:
        """The window as far as known without asking (cache, offline provider,
        `llm_context`); None when unknown."""
        cached = self.cached(provider)
        if cached:
            return cached
        if provider.offline:
            return self.settings.llm_offline_context
        return self.settings.llm_context

    def message_limit(self, provider: Provider) -> int | None:
        """Longest message the provider's model can take at all (`budget.message_chars_limit`)."""
        window = self.known(provider)
        if window is None:
            return None
        return budgeting.message_chars_limit(
            window=window,
            reserved_output=self.settings.responder_max_tokens,
            chars_per_token=self.settings.chars_per_token,
            margin=self.settings.budget_safety_margin,
        )

    async def plan(self, provider: Provider, call: Call, trace: Trace) -> None:
        """Window, minimum window and budget — all before any network call of the answer."""
        window, source = await self.window(provider)
        trace.model = provider.model
        minimum = self.min_context.get(call.purpose)
        if minimum is not None and window < minimum:
            raise ModelError(
                "model_context_too_small",
                f"purpose {call.purpose} needs a window of {minimum} tokens; "
                f"{provider.name} has {window} ({source})",
            )
        budget = budgeting.measure(
            call.messages,
            window=window,
            max_tokens=call.max_tokens,
            chars_per_token=self.settings.chars_per_token,
            margin=self.settings.budget_safety_margin,
        )
        if budget.worth_counting:
            counted = await self.tokenizers.count(provider, call.messages)
            if counted is not None:
                budget = msgspec.structs.replace(budget, counted_input=counted)
        try:
            budgeting.check(
                budget,
                chars_per_token=self.settings.chars_per_token,
                margin=self.settings.budget_safety_margin,
            )
        except ModelError as exc:
            log.warning(
                "prompt budget exceeded",
                extra=logctx.fields(
                    purpose=call.purpose,
                    window=window,
                    max_tokens=call.max_tokens,
                    budget_safety_margin=self.settings.budget_safety_margin,
                    error=exc.message,
                ),
            )
            raise
        trace.set_budget(budget, source)
        call.window = window
        if budget.counted_input is not None:
            call.counted = (len(call.messages), budget.counted_input)

    async def window(self, provider: Provider) -> tuple[int, str]:
        """The context window and where it came from: provider, cache, stale, setting.

        What the provider said is cached for `model_metadata_ttl`, also when it said nothing
        (a server that does not state its window is not asked again on every call).
        """
        key = id(provider)
        cached = self._windows.get(key)
        if cached and self._fresh(cached):
            return self._cached_window(provider, cached[0])
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._windows.get(key)
            if cached and self._fresh(cached):
                return self._cached_window(provider, cached[0])
            try:
                window = await provider.context_window()
            except ModelError as exc:
                if cached and cached[0]:
                    log.warning(
                        "model metadata unavailable; the stale cached window serves",
                        extra=logctx.fields(
                            provider=provider.name, window=cached[0], error=exc.code
                        ),
                    )
                    return cached[0], "stale"
                return self._fallback(provider, f"{exc.code}: {exc.message}")
            self._windows[key] = (window or None, time.monotonic())
            if window:
                return window, "provider"
            return self._fallback(provider, "the provider does not state it")

    def _fresh(self, cached: tuple[int | None, float]) -> bool:
        return time.monotonic() - cached[1] < self.settings.model_metadata_ttl

    def _cached_window(self, provider: Provider, window: int | None) -> tuple[int, str]:
        if window:
            return window, "cache"
        return self._fallback(provider, "the provider does not state it")

    def _fallback(self, provider: Provider, why: str) -> tuple[int, str]:
        if self.settings.llm_context:
            return self.settings.llm_context, "setting"
        raise ModelError(
            "model_metadata_unknown",
            f"context window of {provider.name} unknown ({why}) and llm_context "
            f"(NOVABERG_LLM_CONTEXT) is not set",
        )


def check_fits(call: Call, messages: Sequence[Message], settings: Settings) -> None:
    """`messages` with `call`'s output reserve within the window `call` was planned with;
    `ModelError` (`prompt_budget_exceeded`) when not. A follow-up begins with the call's
    messages and adds its own (`call` itself may be a follow-up already): where the server
    counted the first of them, its count stands for those and the rest is estimated."""
    budget = budgeting.measure(
        messages,
        window=call.window or 0,
        max_tokens=call.max_tokens,
        chars_per_token=settings.chars_per_token,
        margin=settings.budget_safety_margin,
    )
    if call.counted is not None and len(messages) >= call.counted[0]:
        known, tokens = call.counted
        added = messages[known:]
        counted = (
            tokens
            + budgeting.estimate_tokens(added, settings.chars_per_token)
            + budgeting.TEMPLATE_TOKENS_PER_MESSAGE * len(added)
        )
        budget = msgspec.structs.replace(budget, counted_input=counted)
    budgeting.check(
        budget, chars_per_token=settings.chars_per_token, margin=settings.budget_safety_margin
    )
