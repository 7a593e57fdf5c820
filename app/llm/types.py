"""The values that cross the gateway's interface (and `check_call`, its shape check), and
the call a provider gets.

msgspec structs rather than dataclasses: they are built on every call, and msgspec builds
them several times faster."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any, Literal, TypedDict

import msgspec

Role = Literal["system", "user", "assistant"]
ROLES: frozenset[str] = frozenset(("system", "user", "assistant"))


# A line that begins with this opens a block of a frame (`### Verlauf`): the pipeline writes
# its prompts' data so (`app.pipeline.prompts.frame`, which keeps any body line from reading as
# one), and the offline model reads them by it.
BLOCK_PREFIX = "### "


class Message(TypedDict):
    """One chat message: `{"role": "user", "content": "…"}`."""

    role: Role
    content: str


class Usage(msgspec.Struct, frozen=True):
    """Tokens of one call as the provider counted them.

    `estimated` is true when the provider did not report them and the gateway's own
    chars-per-token estimate stands in (the offline provider, a server without usage).
    """

    prompt_tokens: int
    completion_tokens: int
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Completion(msgspec.Struct, frozen=True):
    """The result of `Gateway.complete`.

    `text` is the answer (for a structured call: its JSON text); `value` is the validated
    msgspec object for a structured call, else None.
    """

    text: str
    value: msgspec.Struct | None
    usage: Usage
    model: str
    provider: str
    duration_s: float
    purpose: str = ""
    finish_reason: str | None = None


class Call(msgspec.Struct):
    """One request as a provider sends it (already masked and budgeted)."""

    purpose: str
    messages: list[Message]
    max_tokens: int
    temperature: float
    schema: type[msgspec.Struct] | None = None
    json_schema: dict[str, Any] | None = None
    window: int | None = None  # the budgeted context window (Ollama gets it as num_ctx)
    # Where the budget asked the server's tokenizer: how many of the messages it counted and
    # their tokens (a follow-up that adds messages is judged by it, `app.llm.window`).
    counted: tuple[int, int] | None = None
    # For a remote provider: the privacy egress gate the final request body passes before it
    # is sent (`app.llm.privacy.egress.EgressGate`, awaited with the body's bytes).
    gate: Callable[[bytes], Awaitable[None]] | None = None


class Reply(msgspec.Struct):
    """One provider answer to a non-streaming call."""

    text: str
    model: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


class Chunk(msgspec.Struct):
    """One piece of a streamed answer. The last chunk may carry only usage/finish."""

    text: str = ""
    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None


class TextStream:
    """What `Gateway.stream` returns: an async iterator of text deltas; after the end,
    `completion` holds the whole answer with usage."""

    def __init__(self) -> None:
        self._generator: AsyncGenerator[str, None] | None = None
        self.completion: Completion | None = None

    def __aiter__(self) -> TextStream:
        return self

    async def __anext__(self) -> str:
        assert self._generator is not None
        return await self._generator.__anext__()

    async def aclose(self) -> None:
        if self._generator is not None:
            await self._generator.aclose()


def check_call(
    purpose: str, messages: Sequence[Message], max_tokens: int, temperature: float
) -> None:
    """A call that breaks the interface is a bug in the caller: ValueError, not ModelError."""
    if not isinstance(purpose, str) or not purpose:
        raise ValueError("purpose must be a non-empty string")
    if not messages:
        raise ValueError("messages must not be empty")
    for message in messages:
        if (
            not isinstance(message, dict)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            shape = sorted(message) if isinstance(message, dict) else type(message).__name__
            raise ValueError(
                f"a message must be {{'role': one of {sorted(ROLES)}, 'content': str}}; got {shape}"
            )
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if not 0.0 <= temperature <= 2.0:
        raise ValueError(f"temperature must be within [0, 2], got {temperature!r}")
