"""What the runtime stores and sends: accepted messages, events, WebSocket messages.

- `AcceptedMessage`: one entry of `prompt_queue:{user}:{character}` (SPEC §2, seed 001 §3.0).
- `Event` and its payload keys are the vocabulary runtime and pipeline share
  (`app.pipeline.vocabulary`).
- The WebSocket messages of SPEC §9 as one tagged union (`WsAny`): every one carries
  `type`, `character_id` and `at`. The journal's `journal_progress` is one of them; the
  journal, a layer below, defines it (`app.journal.jobs.JournalProgress`).

Stored records are read leniently (unknown fields ignored, so old and new versions read each
other); nothing here comes from a client: the HTTP body of a message is `MessageIn`, which
forbids unknown fields.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.journal.jobs import JournalProgress
from app.pipeline.vocabulary import Event, ResponseOrigin


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


# --- WebSocket messages (SPEC §9) ---------------------------------------------------------

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


WsAny = (MessageAccepted | TurnState | CharacterStage | CharacterResponse | TurnFailed
         | SessionReset | JournalProgress)

_ENCODER = msgspec.json.Encoder()
_EVENT_DECODER = msgspec.json.Decoder(Event)
_ACCEPTED_DECODER = msgspec.json.Decoder(AcceptedMessage)
WS_DECODER = msgspec.json.Decoder(WsAny)


def encode(value: Any) -> bytes:
    return _ENCODER.encode(value)


def decode_event(raw: str | bytes) -> Event:
    """Raises msgspec.DecodeError/ValidationError for a record that is not an event."""
    return _EVENT_DECODER.decode(raw)


def decode_accepted(raw: str | bytes) -> AcceptedMessage:
    return _ACCEPTED_DECODER.decode(raw)
