"""The session Turn: one utterance of the user or the character, as stored in Redis.

Code uses English attribute names; on the wire (the Redis list, the API) every field keeps
the seed's German name (SPEC §2, seed 000 §2.2), so data written by the seeds'
implementation reads here and the other way round.

Writing is complete: `encode_turn` writes every field, so a stored turn never lacks one.
Reading is lenient: `decode_turn` loads older turns (no `herkunft`, no `turn_id`, `null`
values, numbers stored as strings) and ignores fields it does not know. A field whose value
cannot be read is dropped to its default with a warning instead of losing the whole turn;
only a record that is not a JSON object or has no valid `rolle` is refused
(`TurnDecodeError`), because nobody can tell who said it.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import msgspec

log = logging.getLogger(__name__)

Role = Literal["user", "assistant"]
Origin = Literal["antwort", "fortsetzung", "eigener_impuls", ""]

ROLE_USER: Role = "user"
ROLE_ASSISTANT: Role = "assistant"
ORIGIN_REPLY: Origin = "antwort"            # a reply to the user
ORIGIN_CONTINUE: Origin = "fortsetzung"     # a continue run (self-trigger or thinker retry)
ORIGIN_IMPULSE: Origin = "eigener_impuls"   # the character spoke on its own
ORIGIN_UNKNOWN: Origin = ""                 # old data: the occasion was not recorded
ORIGINS: frozenset[str] = frozenset({ORIGIN_REPLY, ORIGIN_CONTINUE, ORIGIN_IMPULSE, ORIGIN_UNKNOWN})
# A response's origin on the wire (SPEC §5 Delivery) → the stored turn's `herkunft`.
HERKUNFT_OF_RESPONSE = {"reply": ORIGIN_REPLY, "continue": ORIGIN_CONTINUE,
                        "own_impulse": ORIGIN_IMPULSE}


class TurnDecodeError(ValueError):
    """A stored record cannot be read as a Turn at all."""


class Turn(msgspec.Struct):
    """One stored turn. Attribute = English name, wire name = the seed's German name."""

    turn_id: str
    role: Role = msgspec.field(name="rolle")
    content: str = msgspec.field(name="inhalt")
    time: float = msgspec.field(name="zeit")
    # Empty = unknown (old data), never "a reply": a default would invent an occasion.
    origin: Origin = msgspec.field(default="", name="herkunft")
    message_ids: list[str] = msgspec.field(default_factory=list, name="nachrichten_ids")
    intentions: list[str] = msgspec.field(default_factory=list, name="intentionen")
    emotion: str = ""
    mode: str = msgspec.field(default="", name="modus")
    core: str = msgspec.field(default="", name="kern")
    arousal: float | None = None
    emotions_vector: str = msgspec.field(default="", name="emotions_vektor")
    language_style: str = msgspec.field(default="", name="sprach_stil")
    relationship_dynamic: str = msgspec.field(default="", name="beziehungs_dynamik")
    tone: str = ""
    topics: list[str] = msgspec.field(default_factory=list, name="themen")
    action_done: bool | None = msgspec.field(default=None, name="aktion_erledigt")
    action_succeeded: bool | None = msgspec.field(default=None, name="aktion_erfolgreich")

    @property
    def has_content(self) -> bool:
        """A turn contributes to the history only when it says something."""
        return bool(self.content.strip())


_ENCODER = msgspec.json.Encoder()
# strict=False: numbers stored as strings ("0.7") and the like still load.
_DECODER = msgspec.json.Decoder(Turn, strict=False)
_ANY_DECODER = msgspec.json.Decoder()
_FIELDS = msgspec.structs.fields(Turn)
# What an older record may lack although a new one always has it.
_FILL_IF_MISSING: dict[str, Any] = {"turn_id": "", "inhalt": "", "zeit": 0.0}


def encode_turn(turn: Turn) -> bytes:
    """Every field, German wire names."""
    return _ENCODER.encode(turn)


def decode_turn(raw: str | bytes) -> Turn:
    """Read a stored turn leniently (see the module docstring); `TurnDecodeError` if hopeless."""
    try:
        return _DECODER.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return _decode_salvaging(raw)


def _decode_salvaging(raw: str | bytes) -> Turn:
    """The slow path for older or damaged records: keep every field that can be read."""
    try:
        record = _ANY_DECODER.decode(raw)
    except msgspec.DecodeError as exc:
        raise TurnDecodeError(f"stored turn is not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise TurnDecodeError(f"stored turn is a JSON {type(record).__name__}, not an object")
    role = record.get("rolle")
    if role not in (ROLE_USER, ROLE_ASSISTANT):
        raise TurnDecodeError(f"stored turn has no valid rolle: {role!r}")

    clean: dict[str, Any] = {}
    for field in _FIELDS:
        name = field.encode_name
        value = record.get(name)
        if value is None:  # absent or null: the default applies
            continue
        if name == "herkunft" and value not in ORIGINS:
            _warn_dropped(record, name, value, "unknown occasion, read as unknown")
            continue
        try:
            clean[name] = msgspec.convert(value, field.type, strict=False)
        except msgspec.ValidationError:
            _warn_dropped(record, name, value, "unreadable value, default used")
    for name, default in _FILL_IF_MISSING.items():
        clean.setdefault(name, default)
    return msgspec.convert(clean, Turn, strict=False)


def _warn_dropped(record: dict[str, Any], name: str, value: Any, why: str) -> None:
    log.warning("stored turn field dropped", extra={"fields": {
        "field": name, "value": repr(value), "why": why,
        "stored_turn_id": record.get("turn_id")}})
