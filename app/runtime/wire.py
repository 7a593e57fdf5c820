"""What the runtime stores and sends: accepted messages, events, WebSocket messages.

- `AcceptedMessage`: one entry of `prompt_queue:{user}:{character}` (design §2, seed 001 §3.0).
- `Event` and its payloads are the vocabulary runtime and pipeline share
  (`app.pipeline.vocabulary`); `decode_event` reads one: the event with its payload left as
  `msgspec.Raw`, then the payload as the struct its `source` and `typ` name.
- The WebSocket messages of design §9 as one tagged union (`WsAny`): every one carries
  `type`, `character_id` and `at`. The journal's `journal_progress` is one of them; the
  journal, a layer below, defines it (`app.journal.jobs.JournalProgress`).

Stored records are read leniently (unknown fields ignored, so old and new versions read each
other; a payload value that does not fit its field is dropped to the default with a warning
instead of losing the event and its turn); nothing here comes from a client: the HTTP body
of a message is `MessageIn`, which forbids unknown fields.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from app.core.lenient import readable_fields
from app.core.log import fields
from app.journal.jobs import JournalProgress
from app.memory import keys
from app.pipeline.vocabulary import PAYLOADS, Event, EventPayload, ResponseOrigin

log = logging.getLogger("app.runtime.runtime")  # one logger name for the runtime's lines


class MessageIn(msgspec.Struct, forbid_unknown_fields=True):
    """Body of `POST /api/characters/{cid}/messages`."""

    text: str


class AcceptedMessage(msgspec.Struct, kw_only=True):
    """A message as it waits in the prompt queue."""

    message_id: str
    user_id: str
    character_id: str
    text: str
    received_at: float


# --- WebSocket messages (design §9) ---------------------------------------------------------


class WsMessage(msgspec.Struct, tag_field="type", kw_only=True):
    character_id: str
    at: float


class MessageAccepted(WsMessage, tag="message_accepted"):
    message_id: str
    text: str
    received_at: float


class TurnState(WsMessage, tag="turn_state"):
    turn_id: str
    state: str
    message_ids: list[str]


class CharacterStage(WsMessage, tag="character_stage"):
    turn_id: str
    stage: str


class CharacterResponse(WsMessage, tag="character_response"):
    turn_id: str
    message_ids: list[str]
    text: str
    origin: ResponseOrigin
    emotion: str
    arousal: float | None


class TurnFailed(WsMessage, tag="turn_failed"):
    turn_id: str
    message_ids: list[str]
    reason: str


class SessionReset(WsMessage, tag="session_reset"):
    """The pair's session was reset: every tab clears its conversation."""


WsAny = (
    MessageAccepted
    | TurnState
    | CharacterStage
    | CharacterResponse
    | TurnFailed
    | SessionReset
    | JournalProgress
)

_ENCODER = msgspec.json.Encoder()
_EVENT_DECODER = msgspec.json.Decoder(Event[msgspec.Raw])
_PAYLOAD_DECODERS = {kind: msgspec.json.Decoder(payload) for kind, payload in PAYLOADS.items()}
_ANY_DECODER = msgspec.json.Decoder()
_ACCEPTED_DECODER = msgspec.json.Decoder(AcceptedMessage)
WS_DECODER = msgspec.json.Decoder(WsAny)


def encode(value: Any) -> bytes:
    return _ENCODER.encode(value)


def decode_event(raw: str | bytes) -> Event[EventPayload]:
    """The event and its typed payload. Raises msgspec.DecodeError/ValidationError for a
    record that is not an event, or whose `source` and `typ` name no payload."""
    event = _EVENT_DECODER.decode(raw)
    kind = (event.source, event.typ)
    decoder = _PAYLOAD_DECODERS.get(kind)
    if decoder is None:
        raise msgspec.ValidationError(f"no event payload for source {kind[0]!r}, typ {kind[1]!r}")
    try:
        payload = decoder.decode(event.payload)
    except msgspec.ValidationError:
        payload = _salvaged_payload(event)
    return msgspec.structs.replace(event, payload=payload)  # type: ignore[arg-type]  # Raw decoded: the type changes


def _salvaged_payload(event: Event[msgspec.Raw]) -> EventPayload:
    """The slow path for a payload with a value that does not fit: every field that can be
    read, the others dropped to their defaults, each with a warning."""
    record = _ANY_DECODER.decode(event.payload)
    if not isinstance(record, dict):
        raise msgspec.ValidationError(f"event payload is a JSON {type(record).__name__}")
    kind = PAYLOADS[(event.source, event.typ)]

    def dropped(name: str, value: Any) -> None:
        log.warning(
            "stored event field dropped",
            extra=fields(
                field=name,
                value=repr(value),
                why="unreadable value, default used",
                event_id=event.event_id,
                pair=keys.pair_id(event.user_id, event.character_id),
            ),
        )

    return msgspec.convert(readable_fields(record, kind, dropped=dropped), kind)


def decode_accepted(raw: str | bytes) -> AcceptedMessage:
    return _ACCEPTED_DECODER.decode(raw)
