"""Ollama's native API: `/api/chat` (NDJSON stream or one answer), `/api/tags`, `/api/show`.

Ollama cuts a prompt longer than its runtime window silently, so every request sends the
window the gateway budgeted against as `options.num_ctx`: nothing is cut behind our back.
The window: the model's `num_ctx` parameter (its Modelfile) if set, else `llm_context`, else
`llm_ollama_default_context`; never above the length the model was trained for.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

import msgspec

from app.llm.errors import ModelError
from app.llm.providers.base import Provider, context_length_error, describe_error, lines
from app.llm.types import Call, Chunk, Reply

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.M)


class OllamaProvider(Provider):
    name = "ollama"

    async def list_models(self) -> list[str]:
        data = await self.get_json("/api/tags")
        return [m["name"] for m in data.get("models", []) if isinstance(m, dict) and "name" in m]

    async def resolve_model(self) -> str:
        if not self.model:
            models = await self.list_models()
            if not models:
                raise ModelError("model_not_found", "Ollama has no model; run `ollama pull …`")
            self.model = models[0]
        return self.model

    async def context_window(self) -> int | None:
        model = await self.resolve_model()
        data = await self.post_json("/api/show", {"model": model}, "metadata")
        trained = _trained_length(data.get("model_info") or {})
        configured = _NUM_CTX.search(data.get("parameters") or "")
        if configured:
            window = int(configured.group(1))
        elif self.settings.llm_context:
            window = self.settings.llm_context
        elif trained:
            window = self.settings.llm_ollama_default_context
        else:
            return None
        return min(window, trained) if trained else window

    def _payload(self, call: Call, stream: bool) -> dict[str, Any]:
        options: dict[str, Any] = {"temperature": call.temperature, "num_predict": call.max_tokens}
        if call.window:
            options["num_ctx"] = call.window
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": call.messages,
            "stream": stream,
            "options": options,
        }
        if call.json_schema is not None:
            payload["format"] = call.json_schema
        return payload

    async def complete(self, call: Call) -> Reply:
        await self.resolve_model()
        data = await self.post_json(
            "/api/chat", self._payload(call, False), call.purpose, gate=call.gate
        )
        if not isinstance(data, dict) or not isinstance(data.get("message"), dict):
            raise ModelError("model_bad_response", "Ollama answer without `message`")
        return Reply(
            text=data["message"].get("content") or "",
            model=data.get("model") or self.model or "",
            prompt_tokens=data.get("prompt_eval_count"),
            completion_tokens=data.get("eval_count"),
            finish_reason=data.get("done_reason"),
        )

    async def stream(self, call: Call) -> AsyncGenerator[Chunk, None]:
        await self.resolve_model()
        async with self.open_stream(
            "/api/chat", self._payload(call, True), call.purpose, call.gate
        ) as response:
            async for line in lines(response):
                try:
                    data = msgspec.json.decode(line)
                except msgspec.DecodeError:
                    raise ModelError(
                        "model_bad_response", "a streamed line from Ollama is not JSON"
                    ) from None
                if "error" in data:
                    raise context_length_error(data) or ModelError(
                        "model_http_error", f"Ollama stream error: {describe_error(data)}"
                    )
                message = data.get("message") or {}
                if data.get("done"):
                    yield Chunk(
                        text=message.get("content") or "",
                        model=data.get("model"),
                        prompt_tokens=data.get("prompt_eval_count"),
                        completion_tokens=data.get("eval_count"),
                        finish_reason=data.get("done_reason") or "stop",
                    )
                    return
                if message.get("content"):
                    yield Chunk(text=message["content"], model=data.get("model"))
        raise ModelError("model_bad_response", "Ollama's stream ended without `done`")


def _trained_length(model_info: dict[str, Any]) -> int | None:
    for key, value in model_info.items():
        if key.endswith(".context_length") and isinstance(value, int):
            return value
    return None
