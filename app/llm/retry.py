"""The retries of one model call (the gateway's steps 4 and 5).

- transport: connection errors, 5xx and 429 (with Retry-After) are retried with exponential
  backoff and jitter, at most `model_retries` times within `model_retry_max_seconds`; a
  stream is retried only before its first piece;
- structured output: an answer that fails its schema gets exactly one repair retry that
  shows the model the validation error, then `model_bad_output`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

import msgspec

from app.core import log as logctx
from app.core.settings import Settings
from app.llm.errors import ModelError
from app.llm.privacy import StreamUnmasker
from app.llm.providers import Provider
from app.llm.schema import decode
from app.llm.trace import Trace
from app.llm.types import Call, Reply
from app.llm.window import check_fits

log = logging.getLogger(__name__)

T = TypeVar("T")

REPAIR_PROMPT = (
    "Your previous answer was not valid for the required JSON schema: {error}\n"
    "Answer again with only the corrected JSON object, nothing else."
)


class Retries:
    """The retry policy over the settings in force."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def run(self, attempt: Callable[[], Awaitable[T]], trace: Trace) -> T:
        """Run one provider attempt with the retry policy."""
        first_try = time.monotonic()
        while True:
            trace.attempts += 1
            try:
                return await attempt()
            except ModelError as exc:
                delay = self.delay(exc, trace.attempts, first_try)
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    async def stream(
        self, provider: Provider, call: Call, trace: Trace, unmasker: StreamUnmasker | None
    ) -> AsyncGenerator[str, None]:
        """The pieces of one streamed answer (demasked when `unmasker` is given); retried
        only while nothing was yielded."""
        first_try = time.monotonic()
        while True:
            trace.attempts += 1
            yielded = False
            try:
                async with contextlib.aclosing(provider.stream(call)) as chunks:
                    async for chunk in chunks:
                        if chunk.model:
                            trace.model = chunk.model
                        if chunk.finish_reason:
                            trace.finish_reason = chunk.finish_reason
                        trace.add_usage(chunk.prompt_tokens, chunk.completion_tokens)
                        piece = unmasker.feed(chunk.text) if unmasker and chunk.text else chunk.text
                        if piece:
                            yielded = True
                            yield piece
                return
            except ModelError as exc:
                delay = None if yielded else self.delay(exc, trace.attempts, first_try)
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    def delay(self, exc: ModelError, attempts: int, first_try: float) -> float | None:
        """Seconds to wait before the next attempt, or None to give up (and why, logged)."""
        settings = self.settings
        if not exc.retryable:
            return None
        if attempts > settings.model_retries:
            log.warning(
                "model call failed after all retries",
                extra=logctx.fields(
                    error=exc.code, attempts=attempts, model_retries=settings.model_retries
                ),
            )
            return None
        delay = settings.model_backoff_seconds * 2 ** (attempts - 1)
        delay += random.uniform(0, delay / 2)  # noqa: S311 - jitter: parallel callers do not align
        if exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        elapsed = time.monotonic() - first_try
        if elapsed + delay > settings.model_retry_max_seconds:
            log.warning(
                "model call gives up: the next retry would pass the retry budget",
                extra=logctx.fields(
                    error=exc.code,
                    delay=round(delay, 3),
                    model_retry_max_seconds=settings.model_retry_max_seconds,
                ),
            )
            return None
        log.info(
            "model call retry",
            extra=logctx.fields(error=exc.code, attempt=attempts, delay=round(delay, 3)),
        )
        return delay

    async def validated(
        self, provider: Provider, call: Call, reply: Reply, trace: Trace
    ) -> tuple[msgspec.Struct, Reply]:
        """The reply's value under `call.schema`, after at most one repair retry."""
        assert call.schema is not None
        try:
            return decode(reply.text, call.schema), reply
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            first_error = str(exc)
        log.warning(
            "structured output invalid; one repair retry",
            extra=logctx.fields(purpose=call.purpose, provider=provider.name, error=first_error),
        )
        trace.repaired = True
        repair = msgspec.structs.replace(
            call,
            messages=[
                *call.messages,
                {"role": "assistant", "content": reply.text},
                {"role": "user", "content": REPAIR_PROMPT.format(error=first_error)},
            ],
        )
        try:
            check_fits(call, repair.messages, self.settings)
        except ModelError as exc:
            raise ModelError(
                "model_bad_output",
                f"invalid structured output ({first_error}); "
                f"the repair retry does not fit: {exc.message}",
            ) from None
        second = await self.run(lambda: provider.complete(repair), trace)
        trace.add_usage(second.prompt_tokens, second.completion_tokens)
        try:
            return decode(second.text, call.schema), second
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ModelError(
                "model_bad_output",
                f"invalid structured output, also after the one repair retry: {exc}",
            ) from None
