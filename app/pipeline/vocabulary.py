"""The vocabulary runtime and pipeline share (design §5–§6): the event and its payloads, and
the pipeline interface the runtime calls. Runtime and pipeline both import it from here;
the pipeline imports nothing of the runtime.

`Event`: one entry of `event_queue:{user}:{character}`, the seed's field names exactly
(seed 001 §3.1): `event_id, user_id, character_id, source, typ, payload, trigger_count,
erstellt_am`.

The payload is typed: one struct per kind of event, English attributes, the seeds' keys on
the wire (`PAYLOAD_NAMES`, German where the seed is German; the nine EI dimensions keep the
seed's English names):

=========================  =================  =============================================
``source`` / ``typ``       payload            keys, in their wire order
=========================  =================  =============================================
user / message             `UserPayload`      the nine EI dimensions (`Emotion`, which it
                                              extends), `language`, `turn_id`,
                                              `nachrichten_ids`, `user_prompt`
character / message        `ImpulsePayload`   `turn_id`, `nachrichten_ids` (empty),
                                              `eigener_gedanke`, `reiz_herkunft`,
                                              `gedanke_arousal`, `ausloeser_turn_id`
character / continue       `ContinuePayload`  what the run asked for (`Continue`, which it
                                              extends: `retry` + `grund`, `commitment` or
                                              `absicht`), `turn_id`, `nachrichten_ids`,
                                              `gedanke_arousal`
character / awaiting_user  `AwaitingPayload`  `turn_id`, `pending_agent`
=========================  =================  =============================================

`EventPayload` is their union, tagged by the event rather than by msgspec: a msgspec tagged
union reads its tag inside the object, and the seeds' payloads carry none — which payload an
event holds is said by the event's `source` and `typ`, beside it (a tag field added to the
payload would change every stored byte). So `PAYLOADS` maps the pair to its struct, and
`app.runtime.wire.decode_event` reads the event with the payload left as `msgspec.Raw`, then
has msgspec decode those bytes as the struct the pair names: no key is read by hand, and the
bytes on the wire are the seeds' (a struct writes its fields in order; the impulse's
`gedanke_arousal` and `ausloeser_turn_id` always, `None` when unknown; a `Continue` request
only the fields it sets). Payloads come from this process, never from outside: they are read
leniently — unknown keys ignored, absent ones defaulted, so an event an older version queued
still reads, and a value that does not fit is dropped to its default and reported
(`app.core.lenient`) rather than losing the event and its turn.

The runtime owns *when* a pipeline runs (blocks, markers, the run lock, lifecycle, delivery);
a pipeline owns *what* happens in a run. They meet here, in small typed values:

``path1(ctx, block) -> Path1Result``
    Runs once per user block, under a run slot. `block` (`UserBlock`) carries the turn id,
    the pair, and the block's message ids and texts in order. The pipeline perceives the
    block *as one* and stores the complete user turn (its dispatcher is the one writer).
    `Path1Result` carries what it perceived of the user (the nine EI dimensions, empty when
    nothing) and the block's language; the runtime builds the user event's payload from
    them and adds `turn_id`, `nachrichten_ids` and `user_prompt` itself.

``path2(ctx, run) -> Path2Result``
    Runs once per character event, under a run slot. `run` (`CharacterRun`) carries the turn
    id, the pair, the event (source, typ, payload, trigger_count), the message ids it answers,
    the origin the response will have (`reply`, `continue`, `own_impulse`), and the pending
    agent context of a parked `awaiting_user` event, if any (a JSON object the pipeline's
    agents define and read; the runtime only parks it and hands it back). The pipeline
    answers and stores the assistant turn. `Path2Result` carries the text, the character's
    emotion/arousal after its own answer, and optionally a follow-up: a `Continue` request
    (the runtime enqueues a `continue` event with the same turn id and trigger_count + 1,
    unless the self-trigger cap is reached) or `AwaitUser(agent_context)` (an
    `awaiting_user` event the next user message resumes).

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
the app starts (`app.wiring.server.pipelines_ctx`: the product's pipelines, unless a test or
benchmark installed others before the start).
`app.runtime.minimal` holds a minimal real pair (one model call per turn) that the runtime's
own tests and benchmarks install instead, to look at the runtime alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeVar

import msgspec
import redis.asyncio as aioredis
from msgspec import UNSET, UnsetType

from app.core.emotion import Emotion, UnitFloat
from app.core.settings import Settings
from app.memory.commit import TurnGuard
from app.memory.session import SessionMemory

EventSource = Literal["user", "character"]
EventType = Literal["message", "continue", "awaiting_user"]
ResponseOrigin = Literal["reply", "continue", "own_impulse"]

OWN_IMPULSE: Final = "eigener_impuls"  # `reiz_herkunft` of a stimulus the character found itself
RETRY_BY_THINKER = "thinker"  # `retry` of the thinker's retry

# English attribute → the seed's payload key, where they differ (seed 001 §3.1.1, §6.4, §6.6).
PAYLOAD_NAMES: dict[str, str] = {
    "message_ids": "nachrichten_ids",
    "thought": "eigener_gedanke",
    "stimulus_origin": "reiz_herkunft",
    "thought_arousal": "gedanke_arousal",
    "trigger_turn_id": "ausloeser_turn_id",
    "reason": "grund",
    "agent_context": "pending_agent",
}


class UserPayload(Emotion, kw_only=True, rename=PAYLOAD_NAMES):
    """The user event: what path 1 perceived of the user (the nine EI dimensions, empty
    when nothing; the seed: "die neun EI-Dimensionen aus external.emotion") and the
    block's language, then the block's turn, its message ids and its words."""

    arousal: UnitFloat | None = None  # the base's dimension, read as a level
    language: str = ""
    turn_id: str = ""
    message_ids: list[str] = msgspec.field(default_factory=list)
    user_prompt: str = ""


class ImpulsePayload(msgspec.Struct, kw_only=True, rename=PAYLOAD_NAMES):
    """An own impulse (seed 001 §3.1.1): the thought in its own slot — `user_prompt` is
    absent, not empty: nobody spoke —, its origin mark, its level and the turn it came
    from, the last two always written (`None`: unknown; absent would also mean "an entry of
    older make"). An empty thought is a defect: the producer refuses it
    (`ImpulseWithoutThought`), and a stored one fails its turn with a notice."""

    turn_id: str = ""
    message_ids: list[str] = msgspec.field(default_factory=list)
    thought: str = ""
    stimulus_origin: Literal["eigener_impuls"] = OWN_IMPULSE
    thought_arousal: UnitFloat | None = None
    trigger_turn_id: str | None = None


class Continue(msgspec.Struct, kw_only=True, rename=PAYLOAD_NAMES):
    """A character run wants a `continue` run under the same turn id (seed 001 §6.4, §6.6):
    the thinker's retry (`retry` = "thinker", `grund`: what the answer missed), a
    commitment (`commitment`: what it promised to do) or the wish to write again
    (`absicht`). It sets one of them; the others stay unset and are not written."""

    retry: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    commitment: str | UnsetType = UNSET
    intent: str | UnsetType = msgspec.field(default=UNSET, name="absicht")


class ContinuePayload(Continue, kw_only=True, rename=PAYLOAD_NAMES):
    """A `continue` event: the request, then the turn it inherits — its id and message ids
    — and the thought's level, which travels on (the retry of an impulse must not fall back
    to the stored state silently); the thought itself and its trigger turn do not."""

    turn_id: str = ""
    message_ids: list[str] = msgspec.field(default_factory=list)
    thought_arousal: UnitFloat | None = None


class AwaitingPayload(msgspec.Struct, kw_only=True, rename=PAYLOAD_NAMES):
    """An agent's question waiting for the next user message: its turn and the agent's
    context, which the pipeline defines and reads (`pending_agent`)."""

    turn_id: str = ""
    agent_context: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def message_ids(self) -> list[str]:
        return []


EventPayload = UserPayload | ImpulsePayload | ContinuePayload | AwaitingPayload

# Which payload an event holds, by its `source` and `typ` (seed 001 §3.1.1, §3.2).
PAYLOADS: dict[tuple[str, str], type[EventPayload]] = {
    ("user", "message"): UserPayload,
    ("character", "message"): ImpulsePayload,
    ("character", "continue"): ContinuePayload,
    ("character", "awaiting_user"): AwaitingPayload,
}


Payload = TypeVar("Payload")


class Event(msgspec.Struct, Generic[Payload], kw_only=True):
    """One event of a pair's event queue (seed 001 §3.1). Its payload is the struct
    `PAYLOADS` names for its `source` and `typ` (`Event[EventPayload]`); only
    `app.runtime.wire.decode_event` holds one whose payload is not read yet
    (`Event[msgspec.Raw]`)."""

    event_id: str
    user_id: str
    character_id: str
    source: EventSource
    typ: EventType
    payload: Payload
    trigger_count: int = 0
    erstellt_am: float = 0.0

    @property
    def turn_id(self) -> str | None:
        return self.payload.turn_id or None  # type: ignore[attr-defined]  # a type variable; every EventPayload has it

    @property
    def message_ids(self) -> list[str]:
        return list(self.payload.message_ids)  # type: ignore[attr-defined]  # a type variable; every EventPayload has it

    @property
    def origin(self) -> ResponseOrigin:
        """What a response to this event is, for the client (design §5 Delivery)."""
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
    memory: SessionMemory  # the pairs' sessions, the app's one store
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
    """What path 1 gives the user event: what it perceived of the user (`Emotion()`:
    nothing) and the block's language ("" when not known)."""

    perceived: Emotion = field(default_factory=Emotion)
    language: str = ""


@dataclass(frozen=True, slots=True)
class CharacterRun:
    turn_id: str
    user_id: str
    character_id: str
    event: Event[EventPayload]
    message_ids: tuple[str, ...]
    origin: ResponseOrigin
    pending_agent: dict[str, Any] | None = None
    attempt: int = 1


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


async def _nothing_after_delivery(
    ctx: PipelineContext, run: CharacterRun, result: Path2Result
) -> None:
    return None


async def _nothing_to_finish() -> int:
    return 0


@dataclass(frozen=True, slots=True)
class Pipelines:
    path1: Path1
    path2: Path2
    after_delivery: AfterDelivery = _nothing_after_delivery
    # At start, before any turn runs: finish what committed runs of a dead process left
    # undone (the product's: the message-log rows their commits promised); returns how many.
    finish_writes: Callable[[], Awaitable[int]] = _nothing_to_finish
