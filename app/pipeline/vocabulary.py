"""The vocabulary runtime and pipeline share (SPEC §5–§6): the event and its payload keys,
and the pipeline interface the runtime calls. Runtime and pipeline both import it from here;
the pipeline imports nothing of the runtime.

`Event`: one entry of `event_queue:{user}:{character}`, the seed's field names exactly
(seed 001 §3.1): `event_id, user_id, character_id, source, typ, payload, trigger_count,
erstellt_am`; the payload keys `P_*` are the seed's (German where the seed is German).

The runtime owns *when* a pipeline runs (blocks, markers, the run lock, lifecycle, delivery);
a pipeline owns *what* happens in a run. They meet here, in small typed values:

``path1(ctx, block) -> Path1Result``
    Runs once per user block, under a run slot. `block` (`UserBlock`) carries the turn id,
    the pair, and the block's message ids and texts in order. The pipeline perceives the
    block *as one* and stores the complete user turn (its dispatcher is the one writer).
    `Path1Result.event_payload` is added to the user event's payload (the seed's perception
    fields); the runtime adds `turn_id`, `nachrichten_ids` and `user_prompt` itself.

``path2(ctx, run) -> Path2Result``
    Runs once per character event, under a run slot. `run` (`CharacterRun`) carries the turn
    id, the pair, the event (source, typ, payload, trigger_count), the message ids it answers,
    the origin the response will have (`reply`, `continue`, `own_impulse`), and the pending
    agent context of a parked `awaiting_user` event, if any. The pipeline answers and stores
    the assistant turn. `Path2Result` carries the text, the character's emotion/arousal after
    its own answer, and optionally a follow-up: `Continue(payload)` (the runtime enqueues a
    `continue` event with the same turn id and trigger_count + 1, unless the self-trigger cap
    is reached) or `AwaitUser(agent_context)` (an `awaiting_user` event the next user
    message resumes).

``after_delivery(ctx, run, result) -> None``
    Runs after the response went out, outside the run lock and without holding the pair
    (the session summary check lives here). Its failure is logged, never reported as the
    turn's.

`ctx` (`PipelineContext`) gives the services (settings, Redis, the model gateway), a `stage`
callback that pushes `character_stage` to every tab of the user, and the turn's `guard`: a
pipeline writes its turn through `app.memory.commit.commit(redis, guard, writes)`, one
transaction that lands only while the turn is open and holds the pair's marker, so a turn
failed meanwhile — e.g. by a session reset — leaves no late write behind.

A pipeline signals a model failure by raising `app.llm.ModelError`; the runtime fails the turn
with the error's code as the reason. A pipeline that ends a turn on purpose (e.g. its answer
was rejected) raises `TurnRejected(reason)`; the turn fails with that reason. Any other
exception fails it as `internal_error`.

The set of pipelines in use is `app[PIPELINES]` (`Pipelines`), put there in one place when
the app is created (`app.wiring.server.install_pipelines`: the product's pipelines).
`app.runtime.minimal` holds a minimal real pair (one model call per turn) that the runtime's
own tests and benchmarks install instead, to look at the runtime alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
import redis.asyncio as aioredis

from app.core.settings import Settings
from app.memory.commit import TurnGuard

EventSource = Literal["user", "character"]
EventType = Literal["message", "continue", "awaiting_user"]
ResponseOrigin = Literal["reply", "continue", "own_impulse"]

# Payload field names of seed 001 §3.1.1 (German where the seed is German).
P_TURN_ID = "turn_id"
P_MESSAGE_IDS = "nachrichten_ids"
P_USER_PROMPT = "user_prompt"
P_THOUGHT = "eigener_gedanke"
P_STIMULUS_ORIGIN = "reiz_herkunft"
P_THOUGHT_AROUSAL = "gedanke_arousal"
P_TRIGGER_TURN_ID = "ausloeser_turn_id"
P_AGENT_CONTEXT = "pending_agent"
OWN_IMPULSE = "eigener_impuls"


# Payload fields of a continue event the character pipeline asks for (seed 001 §6.4, §6.6).
P_INTENT = "absicht"
P_COMMITMENT = "commitment"
P_RETRY = "retry"
P_REASON = "grund"
RETRY_BY_THINKER = "thinker"


class Event(msgspec.Struct, kw_only=True):
    """One event of a pair's event queue (seed 001 §3.1)."""

    event_id: str
    user_id: str
    character_id: str
    source: EventSource
    typ: EventType
    payload: dict[str, Any] = msgspec.field(default_factory=dict)
    trigger_count: int = 0
    erstellt_am: float = 0.0

    @property
    def turn_id(self) -> str | None:
        value = self.payload.get(P_TURN_ID)
        return value if isinstance(value, str) and value else None

    @property
    def message_ids(self) -> list[str]:
        value = self.payload.get(P_MESSAGE_IDS)
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    @property
    def is_impulse(self) -> bool:
        return self.payload.get(P_STIMULUS_ORIGIN) == OWN_IMPULSE

    @property
    def origin(self) -> ResponseOrigin:
        """What a response to this event is, for the client (SPEC §5 Delivery)."""
        if self.typ == "continue":
            return "continue"
        if self.source == "character":
            return "own_impulse"
        return "reply"


class ImpulseWithoutThought(ValueError):
    """An own impulse must carry its thought; there is no fallback to the stimulus slot."""


# --- the pipeline interface ----------------------------------------------------------------

Stage = Callable[[str], Awaitable[None]]


class TurnRejected(Exception):
    """A pipeline ends its turn on purpose; `reason` (e.g. `tribunal_rejected`) is what the
    user's `turn_failed` names."""

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class PipelineContext:
    settings: Settings
    redis: aioredis.Redis
    gateway: Any  # app.llm.Gateway (typed loosely: the runtime does not import providers)
    stage: Stage
    guard: TurnGuard | None  # what the turn's commit checks; None outside a running turn


@dataclass(frozen=True, slots=True)
class UserBlock:
    """The front block of a pair's prompt queue: messages perceived as one."""

    turn_id: str
    user_id: str
    character_id: str
    message_ids: tuple[str, ...]
    texts: tuple[str, ...]
    received_at: tuple[float, ...]
    attempt: int = 1

    @property
    def text(self) -> str:
        """The block's user turn text: its messages joined by newlines, in order."""
        return "\n".join(self.texts)


@dataclass(frozen=True, slots=True)
class Path1Result:
    event_payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CharacterRun:
    turn_id: str
    user_id: str
    character_id: str
    event: Event
    message_ids: tuple[str, ...]
    origin: ResponseOrigin
    pending_agent: dict[str, Any] | None = None
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class Continue:
    """The character wants to say or do more: a `continue` run under the same turn id."""

    payload: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AwaitUser:
    """An agent asked the user something; its context waits for the next user message."""

    agent_context: dict[str, Any] = field(default_factory=dict)


FollowUp = Continue | AwaitUser


@dataclass(frozen=True, slots=True)
class Path2Result:
    text: str
    origin: ResponseOrigin
    emotion: str = "neutral"
    arousal: float | None = None
    follow_up: FollowUp | None = None


Path1 = Callable[[PipelineContext, UserBlock], Awaitable[Path1Result]]
Path2 = Callable[[PipelineContext, CharacterRun], Awaitable[Path2Result]]
AfterDelivery = Callable[[PipelineContext, CharacterRun, Path2Result], Awaitable[None]]


async def _nothing_after_delivery(ctx: PipelineContext, run: CharacterRun,
                                  result: Path2Result) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Pipelines:
    path1: Path1
    path2: Path2
    after_delivery: AfterDelivery = _nothing_after_delivery
