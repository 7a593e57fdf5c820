"""The built-in offline provider: deterministic, no model, no network.

It answers through the same interface as the real providers — its structured answers are
JSON text the gateway decodes and validates like any other — so the app runs out of the box
and tests run without a GPU. What it answers per purpose is the table it is built with
(`answers`: the provider's own `BASE_ANSWERS` unless the gateway hands it the product's,
`app.wiring.purposes`); `app.llm.offline.handlers` says what a handler returns.
Its context window is `llm_offline_context` (seed 004: the fake provider's 32K).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncGenerator
from typing import Any

import msgspec

from app.core import log as logctx
from app.llm.offline import handlers
from app.llm.providers.base import Provider
from app.llm.schema import fill, neutral_instance
from app.llm.types import Call, Chunk, Reply

OFFLINE_MODEL = "offline"
_PIECES = re.compile(r"\S+\s*|\s+")


class OfflineProvider(Provider):
    name = "offline"
    offline = True

    def __init__(
        self,
        *,
        answers: handlers.Answers = handlers.BASE_ANSWERS,
        memory: handlers.DayMemory | None = None,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        self.answers = answers
        # What it said today per conversation (the running turn's pair), kept across
        # restarts: its replies vary. None: it remembers nothing beyond the prompt.
        self.memory = memory

    async def context_window(self) -> int | None:
        return self.settings.llm_offline_context

    async def list_models(self) -> list[str]:
        return [OFFLINE_MODEL]

    def answer(self, call: Call, conversation: handlers.Conversation | None = None) -> str:
        """The answer text for a call (JSON text for a structured call); `conversation`:
        what was said today in the call's conversation."""
        request = handlers.OfflineRequest(
            call.purpose,
            call.messages,
            call.schema,
            call.max_tokens,
            self.settings.chars_per_token,
            conversation,
        )
        handler = self.answers.get(call.purpose)
        result = handler(request) if handler is not None else None
        if call.schema is not None:
            return msgspec.json.encode(_as_instance(call.schema, result)).decode()
        if result is None:
            return handlers.reflective_reply(request.user_text, request.max_chars)
        if isinstance(result, str):
            return result
        return msgspec.json.encode(result).decode()

    async def complete(self, call: Call) -> Reply:
        text = await self._answer_off_loop(call)
        return Reply(
            text=text,
            model=OFFLINE_MODEL,
            finish_reason="stop",
            prompt_tokens=self._tokens(sum(len(m["content"]) for m in call.messages)),
            completion_tokens=self._tokens(len(text)),
        )

    async def stream(self, call: Call) -> AsyncGenerator[Chunk, None]:
        text = await self._answer_off_loop(call)
        for piece in _PIECES.findall(text):
            yield Chunk(text=piece, model=OFFLINE_MODEL)
        yield Chunk(
            model=OFFLINE_MODEL,
            finish_reason="stop",
            prompt_tokens=self._tokens(sum(len(m["content"]) for m in call.messages)),
            completion_tokens=self._tokens(len(text)),
        )

    async def _answer_off_loop(self, call: Call) -> str:
        """The rules read messages of up to 20 000 characters: tens of milliseconds of CPU
        that would otherwise stall every other user's requests on the event loop. What the
        conversation heard today is read before and what it hears now kept after."""
        pair = logctx.pair.get()
        if not pair or self.memory is None or call.purpose not in handlers.CONVERSATION_PURPOSES:
            return await asyncio.to_thread(self.answer, call)
        conversation = handlers.Conversation(await self.memory.said(pair))
        text = await asyncio.to_thread(self.answer, call, conversation)
        await self.memory.remember(pair, conversation.new)
        return text

    def _tokens(self, chars: int) -> int:
        return math.ceil(chars / self.settings.chars_per_token)


def _as_instance(
    schema: type[msgspec.Struct], result: str | dict | msgspec.Struct | None
) -> msgspec.Struct:
    if isinstance(result, schema):
        return result
    if isinstance(result, dict):
        return fill(schema, result)
    if isinstance(result, str):
        return fill(schema, text_fields(result))
    return neutral_instance(schema)


def text_fields(answer: str) -> dict[str, str]:
    """Where a text answer goes in a schema that asked for one."""
    return dict.fromkeys(
        ("text", "antwort", "reply", "answer", "content", "response", "summary", "zusammenfassung"),
        answer,
    )
