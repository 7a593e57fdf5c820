"""Every model call leaves a record (issue 3 §8, seed 004 §16.5).

A record holds purpose, provider, model, the budget arithmetic (estimated input, window,
reserve, margin), the tokens the provider reported, duration, attempts, outcome and error
code — never prompt or answer text. Records go to the log (one `model call` line each) and
into a bounded in-memory ring that `GET /api/admin/llm/traces` reads.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

import msgspec

from app.core import log as logctx
from app.llm.budget import Budget, estimate_tokens
from app.llm.errors import ModelError
from app.llm.types import Message, Usage


class TraceRecord(msgspec.Struct):
    """One call's record as the ring shows it (`GET /api/admin/llm/traces`; field order: the
    answer's key order). A msgspec struct: cheap to build, which keeps the gateway's own
    cost per call small."""

    purpose: str
    provider: str
    model: str | None
    stream: bool
    at: float = msgspec.field(default_factory=time.time)
    turn_id: str | None = msgspec.field(default_factory=logctx.turn_id.get)
    pair: str | None = msgspec.field(default_factory=logctx.pair.get)
    budget: dict[str, int | bool | None] | None = None  # `Budget.as_dict`
    window_source: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tokens_estimated: bool = False
    duration_ms: float | None = None
    attempts: int = 0
    repaired: bool = False
    masked: int = 0
    masked_kinds: dict[str, int] | None = None  # of a masked call: kind → identities replaced
    refused: str | None = None  # privacy_blocked by the egress "gate" or the "reply" check
    privacy_retry: bool = False  # a reply was blocked and the one corrective retry ran
    finish_reason: str | None = None
    outcome: str = "running"
    error_code: str | None = None
    error: str | None = None


class Trace(TraceRecord):
    """The record of a call being made, with the clock its duration is measured on."""

    started: float = msgspec.field(default_factory=time.perf_counter)

    def set_budget(self, budget: Budget, source: str) -> None:
        self.budget = budget.as_dict()
        self.window_source = source

    def add_usage(self, prompt_tokens: int | None, completion_tokens: int | None) -> None:
        if prompt_tokens is not None:
            self.prompt_tokens = (self.prompt_tokens or 0) + prompt_tokens
        if completion_tokens is not None:
            self.completion_tokens = (self.completion_tokens or 0) + completion_tokens

    def usage(
        self, messages: Sequence[Message], answer: str, *, reported: bool, chars_per_token: float
    ) -> Usage:
        """The call's tokens: as the provider reported them (`reported`: it counts, and it
        did for both sides), else the chars-per-token estimate stands in for what is missing
        and the record says so."""
        if reported and self.prompt_tokens is not None and self.completion_tokens is not None:
            return Usage(self.prompt_tokens, self.completion_tokens)
        usage = Usage(
            self.prompt_tokens
            if self.prompt_tokens is not None
            else estimate_tokens(messages, chars_per_token),
            self.completion_tokens
            if self.completion_tokens is not None
            else estimate_tokens([{"role": "assistant", "content": answer}], chars_per_token),
            estimated=True,
        )
        self.prompt_tokens, self.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        self.tokens_estimated = True
        return usage

    def finish(self, outcome: str, *, code: str | None = None, error: str | None = None) -> None:
        self.outcome = outcome
        self.error_code = code
        self.error = error
        self.duration_ms = round((time.perf_counter() - self.started) * 1000, 3)

    def fail(self, exc: BaseException) -> None:
        """Finish on the exception that ended the call: a model error with its code, a
        cancellation (or a stream closed early) as cancelled, anything else as internal."""
        if isinstance(exc, ModelError):
            self.finish("error", code=exc.code, error=exc.message)
        elif isinstance(exc, (asyncio.CancelledError, GeneratorExit)):
            self.finish("cancelled")
        else:
            self.finish("error", code="internal_error", error=type(exc).__name__)

    def record(self) -> TraceRecord:
        """The record without its clock (a copy: the ring's reader gets its own)."""
        return TraceRecord(**{name: getattr(self, name) for name in TraceRecord.__struct_fields__})

    def log_fields(self) -> dict[str, Any]:
        """The record for a log line: fields without a value left out; turn_id and pair
        come from the log context."""
        data = msgspec.structs.asdict(self)
        for name in ("turn_id", "pair", "at", "started"):
            del data[name]
        return {name: value for name, value in data.items() if value is not None}


class TraceRing:
    """The last `size` records, newest first when read."""

    def __init__(self, size: int) -> None:
        self._records: deque[Trace] = deque(maxlen=size)

    def add(self, trace: Trace) -> None:
        self._records.append(trace)

    def __len__(self) -> int:
        return len(self._records)

    def list(self, limit: int | None = None) -> list[TraceRecord]:
        newest_first = list(reversed(self._records))
        if limit is not None:
            newest_first = newest_first[:limit]
        return [trace.record() for trace in newest_first]
