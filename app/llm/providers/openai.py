"""Any OpenAI-compatible server: llama.cpp, vLLM, LM Studio, OpenRouter.

`/v1/chat/completions` (SSE streaming with usage via `stream_options.include_usage`),
`response_format: {"type": "json_schema", …}` for structured output, `/v1/models` for the
model list and, where the server says it, the context window (`context_length`,
`max_model_len`, `max_context_length`); llama.cpp's own server states it under `/props`, with
its number of slots (`total_slots`). `POST /tokenize` counts a text with the server's own
tokenizer (llama.cpp: `{"content"}` → `{"tokens"}`; vLLM: `{"model", "prompt"}` →
`{"count"}`; one body asks both); a server without it answers 404.

Structured output is asked as `{"type": "json_schema", "json_schema": {"name", "schema"}}`
(OpenAI, vLLM, LM Studio, OpenRouter, llama.cpp's own server). A server that refuses that
shape by naming `response_format` in its error (llama-cpp-python's server answers 500 with
"Input should be 'text' or 'json_object'") is asked again, once, in the older shape
`{"type": "json_object", "schema": …}`, and keeps that shape from then on.

OpenRouter gets `provider.data_collection = "deny"` and its context compression switched
off (`plugins` and the older `transforms: []`), so nothing is cut behind our back (seed 004
§16.3). Other servers never get these fields.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import urlsplit

import msgspec

from app.llm.errors import ModelError
from app.llm.providers.base import Provider, context_length_error, describe_error, lines
from app.llm.schema import schema_name
from app.llm.types import Call, Chunk, Reply

log = logging.getLogger(__name__)

_WINDOW_KEYS = ("context_length", "max_model_len", "max_context_length", "context_window")
# A local server counts even a window's worth of text in milliseconds; what takes longer is
# a server in trouble, and the budget goes on with its estimate rather than wait for it.
TOKENIZE_TIMEOUT_SECONDS = 2.0
_DONE = b"[DONE]"


class OpenAIProvider(Provider):
    name = "openai"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if self.url and self.url.endswith("/v1"):
            self.url = self.url[: -len("/v1")]  # paths below carry /v1 themselves
        self.schema_style = "json_schema"  # or "json_object" for servers that want that

    @property
    def is_openrouter(self) -> bool:
        host = urlsplit(self.url or "").hostname or ""
        return host == "openrouter.ai" or host.endswith(".openrouter.ai")

    async def _models(self) -> list[dict[str, Any]]:
        data = await self.get_json("/v1/models")
        entries = data.get("data", []) if isinstance(data, dict) else []
        return [e for e in entries if isinstance(e, dict) and "id" in e]

    async def list_models(self) -> list[str]:
        return [entry["id"] for entry in await self._models()]

    async def context_window(self) -> int | None:
        entries = await self._models()
        if not self.model and entries:
            self.model = entries[0]["id"]
        for entry in entries:
            if entry["id"] == self.model or len(entries) == 1:
                window = _window_of(entry)
                if window:
                    return window
        return await self._llama_cpp_window()

    async def _llama_cpp_props(self, *, busy_raises: bool = False) -> dict[str, Any]:
        """llama.cpp's `/props`; empty from another server (it does not say). `busy_raises`:
        a 5xx raises rather than count as "does not say" (llama.cpp answers 503 while it
        loads the model)."""
        try:
            props = await self.get_json("/props")
        except ModelError as exc:
            busy = busy_raises and exc.status is not None and exc.status >= 500
            if not busy and exc.code in (
                "model_not_found",
                "model_http_error",
                "model_bad_response",
            ):
                return {}  # not llama.cpp's server: it does not say
            raise
        return props if isinstance(props, dict) else {}

    async def _llama_cpp_window(self) -> int | None:
        props = await self._llama_cpp_props()
        settings = props.get("default_generation_settings") or {}
        window = (settings.get("n_ctx") if isinstance(settings, dict) else None) or props.get(
            "n_ctx"
        )
        return _positive(window)

    async def parallel_slots(self) -> int | None:
        return _positive((await self._llama_cpp_props(busy_raises=True)).get("total_slots"))

    async def count_tokens(self, text: str) -> int | None:
        payload = {"model": self.model or "default", "content": text, "prompt": text}
        try:
            data = await self.post_json(
                "/tokenize", payload, "tokenize", timeout=TOKENIZE_TIMEOUT_SECONDS
            )
        except ModelError as exc:
            if exc.code == "model_not_found" or exc.status in (405, 501):
                return None  # no tokenizer at this server
            raise
        count = data.get("count") if isinstance(data, dict) else None
        tokens = data.get("tokens") if isinstance(data, dict) else None
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            return count
        if isinstance(tokens, list):
            return len(tokens)
        raise ModelError("model_bad_response", "/tokenize answered without tokens or count")

    def _payload(self, call: Call, stream: bool) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model or "default",
            "messages": call.messages,
            "max_tokens": call.max_tokens,
            "temperature": call.temperature,
            "stream": stream,
        }
        if stream:
            payload["stream_options"] = {"include_usage": True}
        if not self.remote:
            # llama.cpp's server keeps the slot's prompt and prefills only what differs
            # (issue 36); a local vLLM or LM Studio ignores the field. A remote server
            # (OpenAI refuses fields it does not know) never gets it.
            payload["cache_prompt"] = True
        if call.json_schema is not None and call.schema is not None:
            if self.schema_style == "json_object":
                payload["response_format"] = {"type": "json_object", "schema": call.json_schema}
            else:
                payload["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": schema_name(call.schema), "schema": call.json_schema},
                }
        if self.is_openrouter:
            payload["provider"] = {"data_collection": "deny"}
            payload["plugins"] = [{"id": "context-compression", "enabled": False}]
            payload["transforms"] = []
        return payload

    async def complete(self, call: Call) -> Reply:
        try:
            return await self._complete(call)
        except ModelError as exc:
            if not self._older_schema_shape(call, exc):
                raise
        return await self._complete(call)

    def _older_schema_shape(self, call: Call, exc: ModelError) -> bool:
        """Switch to `json_object` + schema when the server refused `json_schema`."""
        refused = (
            call.json_schema is not None
            and self.schema_style == "json_schema"
            and exc.status in (400, 422, 500)
            and "response_format" in exc.message
        )
        if refused:
            self.schema_style = "json_object"
            log.info(
                "server refuses response_format json_schema; asking with json_object "
                "+ schema from now on",
                extra={"fields": {"url": self.url}},
            )
        return refused

    async def _complete(self, call: Call) -> Reply:
        data = await self.post_json(
            "/v1/chat/completions", self._payload(call, False), call.purpose, gate=call.gate
        )
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError("model_bad_response", "answer without choices[0].message") from None
        usage = data.get("usage") or {}
        return Reply(
            text=message.get("content") or "",
            model=data.get("model") or self.model or "",
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            finish_reason=choice.get("finish_reason"),
        )

    async def stream(self, call: Call) -> AsyncGenerator[Chunk, None]:
        async with self.open_stream(
            "/v1/chat/completions", self._payload(call, True), call.purpose, call.gate
        ) as response:
            events = 0
            async for line in lines(response):
                if not line.startswith(b"data:"):
                    continue  # SSE comments, `event:` lines, keep-alives
                data_part = line[5:].strip()
                if data_part == _DONE:
                    return
                events += 1
                chunk = _chunk(data_part)
                if chunk is not None:
                    yield chunk
            if events == 0:
                # llama.cpp answers a prompt beyond its window, when streaming, with 200 and
                # an empty event stream; no other cause leaves a stream without one event.
                raise ModelError(
                    "provider_context_length_rejected",
                    "the server ended the stream without a single event "
                    "(llama.cpp does this for a prompt beyond its window)",
                )


def _chunk(data_part: bytes) -> Chunk | None:
    try:
        data = msgspec.json.decode(data_part)
    except msgspec.DecodeError:
        raise ModelError("model_bad_response", "a streamed event is not JSON") from None
    if not isinstance(data, dict):
        raise ModelError("model_bad_response", "a streamed event is not an object")
    if "error" in data:
        raise context_length_error(data) or ModelError(
            "model_http_error", f"stream error: {describe_error(data)}"
        )
    usage = data.get("usage") or {}
    choices = data.get("choices") or []
    delta = (choices[0].get("delta") or {}) if choices else {}
    finish = choices[0].get("finish_reason") if choices else None
    text = delta.get("content") or ""
    if not text and not usage and not finish:
        return None  # role-only or empty delta (llama.cpp sends these)
    return Chunk(
        text=text,
        model=data.get("model"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        finish_reason=finish,
    )


def _window_of(entry: dict[str, Any]) -> int | None:
    for key in _WINDOW_KEYS:
        value = entry.get(key)
        if isinstance(value, int) and value > 0:
            return value
    meta = entry.get("meta")
    if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int):
        return meta["n_ctx"]
    return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
