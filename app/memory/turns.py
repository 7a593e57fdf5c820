"""The session Turn: one utterance of the user or the character, as stored in Redis.

Code uses English attribute names; on the wire (the Redis list, the API) every field keeps
the seed's German name (design §2, seed 000 §2.2), so data written by the seeds'
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
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from app.core.emotion import EI_FIELDS, Emotion, ListedEmotion
from app.core.emotion import STORED_NAMES as EI_STORED_NAMES
from app.core.lenient import readable_fields

log = logging.getLogger(__name__)

Role = Literal["user", "assistant"]
Occasion = Literal["antwort", "fortsetzung", "eigener_impuls", ""]

ROLE_USER: Role = "user"
ROLE_ASSISTANT: Role = "assistant"
# Why the character spoke: a stored turn's `herkunft` (attribute `occasion`).
OCCASION_REPLY: Occasion = "antwort"  # a reply to the user
OCCASION_CONTINUE: Occasion = "fortsetzung"  # a continue run (self-trigger or thinker retry)
OCCASION_IMPULSE: Occasion = "eigener_impuls"  # the character spoke on its own
OCCASION_UNKNOWN: Occasion = ""  # old data: the occasion was not recorded
OCCASIONS: frozenset[str] = frozenset(
    {OCCASION_REPLY, OCCASION_CONTINUE, OCCASION_IMPULSE, OCCASION_UNKNOWN}
)
# The one table between a response's `origin` on the wire (design §5 Delivery) and the stored
# turn's `herkunft`. The web UI reads it from the session endpoint (`origins`), never keeps
# its own copy.
OCCASION_OF_ORIGIN: dict[str, Occasion] = {
    "reply": OCCASION_REPLY,
    "continue": OCCASION_CONTINUE,
    "own_impulse": OCCASION_IMPULSE,
}
ORIGIN_OF_OCCASION: dict[str, str] = {
    occasion: origin for origin, occasion in OCCASION_OF_ORIGIN.items()
}
# English attribute → the seeds' German name on the wire; the EI dimensions' from the one
# table in `app.core.emotion`.
STORED_NAMES: dict[str, str] = {
    **EI_STORED_NAMES,
    "role": "rolle",
    "content": "inhalt",
    "time": "zeit",
    "occasion": "herkunft",
    "message_ids": "nachrichten_ids",
    "action_done": "aktion_erledigt",
    "action_succeeded": "aktion_erfolgreich",
}


class TurnDecodeError(ValueError):
    """A stored record cannot be read as a Turn at all."""


class Turn(ListedEmotion, rename=STORED_NAMES):
    """One stored turn. Attribute = English name, wire name = the seed's German name
    (`STORED_NAMES`). It carries the nine EI dimensions of who spoke: seven as fields,
    `intent` and `prompt_topic` as the lists `intentions` and `topics` (`emotion_fields`).
    It declares them itself, among its own fields in the stored record's order: an
    inherited field would come first and move every key (`app.core.emotion`); a test holds
    them to the base `Emotion`."""

    turn_id: str
    role: Role
    content: str
    time: float
    # Empty = unknown (old data), never "a reply": a default would invent an occasion.
    occasion: Occasion = ""
    message_ids: list[str] = msgspec.field(default_factory=list)
    intentions: list[str] = msgspec.field(default_factory=list)
    emotion: str = ""
    mode: str = ""
    core: str = ""
    arousal: float | None = None
    emotions_vector: str = ""
    language_style: str = ""
    relationship_dynamic: str = ""
    tone: str = ""
    topics: list[str] = msgspec.field(default_factory=list)
    action_done: bool | None = None
    action_succeeded: bool | None = None

    @property
    def has_content(self) -> bool:
        """A turn contributes to the history only when it says something."""
        return bool(self.content.strip())


_LISTED = {"intent": "intentions", "prompt_topic": "topics"}


def emotion_fields(emotion: Emotion, **overrides: Any) -> dict[str, Any]:
    """A turn's fields for the nine EI dimensions of `emotion`: seven as they are, `intent`
    and `prompt_topic` as one-element lists (none when empty); `overrides` on top (a user
    turn keeps every perceived intention and topic)."""
    values: dict[str, Any] = {}
    for name in EI_FIELDS:
        value = getattr(emotion, name)
        if name in _LISTED:
            values[_LISTED[name]] = [value] if value else []
        else:
            values[name] = value
    values.update(overrides)
    return values


_ENCODER = msgspec.json.Encoder()
# strict=False: numbers stored as strings ("0.7") and the like still load.
_DECODER = msgspec.json.Decoder(Turn, strict=False)
_ANY_DECODER = msgspec.json.Decoder()
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


def decode_stored(raws: Sequence[str | bytes], pair: str) -> list[Turn]:
    """A stored list of turns; a record nobody can read is left out and logged as an error."""
    turns: list[Turn] = []
    for index, raw in enumerate(raws):
        try:
            turns.append(decode_turn(raw))
        except TurnDecodeError as exc:
            log.error(
                "stored turn unreadable; left out",
                extra={"fields": {"pair": pair, "index": index, "error": str(exc)}},
            )
    return turns


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

    occasion = record.get("herkunft")
    if occasion is not None and (not isinstance(occasion, str) or occasion not in OCCASIONS):
        _warn_dropped(record, "herkunft", occasion, "unknown occasion, read as unknown")
        record = {name: value for name, value in record.items() if name != "herkunft"}

    def dropped(name: str, value: Any) -> None:
        _warn_dropped(record, name, value, "unreadable value, default used")

    clean = readable_fields(record, Turn, strict=False, dropped=dropped)
    for name, default in _FILL_IF_MISSING.items():
        clean.setdefault(name, default)
    return msgspec.convert(clean, Turn, strict=False)


def _warn_dropped(record: dict[str, Any], name: str, value: Any, why: str) -> None:
    log.warning(
        "stored turn field dropped",
        extra={
            "fields": {
                "field": name,
                "value": repr(value),
                "why": why,
                "stored_turn_id": record.get("turn_id"),
            }
        },
    )
