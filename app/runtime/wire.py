"""What the runtime stores and sends: accepted messages, events, WebSocket messages.

- `AcceptedMessage`: one entry of `prompt_queue:{user}:{character}` (SPEC §2, seed 001 §3.0).
- `Event`: one entry of `event_queue:{user}:{character}`, the seed's field names exactly
  (seed 001 §3.1): `event_id, user_id, character_id, source, typ, payload, trigger_count,
  erstellt_am`.
- The WebSocket messages of SPEC §9 as one tagged union: every one carries `type`,
  `character_id` and `at`.

Stored records are read leniently (unknown fields ignored, so old and new versions read each
other); nothing here comes from a client: the HTTP body of a message is `MessageIn`, which
forbids unknown fields.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

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
         | SessionReset)

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
