"""EI calc: the user's perceived state (path 1) and the character's state (path 2).

User (path 1): the perception's nine EI dimensions as one `Emotion`; it is stored in the
user turn and travels to path 2 in the user event's payload (seed 001 §3.1.1).

Character (path 2, seed 001 §4 — the empathy switch on `source`):
- `user` event: decay toward the character's baseline, the arousal moves toward the user's
  perceived arousal by `empathy_alpha`; the labels follow the user: the character's emotion
  answers the user's (`EMPATHY`), mode, tone, style and dynamic are the conversation's.
- `character` event (continue, impulse): decay only; labels stay.
Then a thought's own arousal (`gedanke_arousal`) raises the arousal when it is higher.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from app.core.emotion import EI_FIELDS, Emotion, copy_emotion
from app.core.log import fields
from app.core.settings import Settings
from app.memory.state import CharacterState, empathy_switch, in_unit_range, raise_arousal
from app.pipeline.schemas import Perception

log = logging.getLogger(__name__)

# How the character's emotion answers the user's (labels are never blended).
EMPATHY: dict[str, str] = {
    "trauer": "mitgefuehl", "angst": "fuersorge", "stress": "ruhe", "erschoepfung": "fuersorge",
    "wut": "ruhe", "ekel": "mitgefuehl", "freude": "freude", "begeisterung": "freude",
    "liebe": "zuneigung", "dankbarkeit": "freude", "ueberraschung": "neugier",
}
# The labels the character takes over from the user as they are (the emotion answers through
# `EMPATHY`; the emotions vector is the character's own).
_FOLLOWING = ("mode", "tone", "language_style", "relationship_dynamic", "intent", "prompt_topic")


def user_emotion(perception: Perception) -> Emotion:
    """EI calc (user): the perception's reading as the nine EI dimensions, its labels in
    lower case (a topic keeps its case: it is the user's word)."""
    read = copy_emotion(perception, Emotion())
    labels = {name: getattr(read, name).strip().lower() for name in EI_FIELDS
              if name not in ("arousal", "prompt_topic")}
    return msgspec.structs.replace(read, **labels, prompt_topic=read.prompt_topic.strip())


def to_payload(user: Emotion) -> dict[str, Any]:
    return msgspec.to_builtins(user)


def from_payload(payload: dict[str, Any]) -> Emotion | None:
    """The user's EI dimensions from an event payload; None when the payload has none (a
    character event). An unusable value is reported and left empty, never guessed."""
    if not any(name in payload for name in EI_FIELDS):
        return None
    values: dict[str, Any] = {}
    for name in EI_FIELDS:
        value = payload.get(name)
        if name == "arousal":
            values[name] = _unit_float(value)
        elif isinstance(value, str):
            values[name] = value
    return Emotion(**values)


def _unit_float(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not in_unit_range(value):
        log.warning("user arousal in event payload unusable; left out",
                    extra=fields(value=repr(value)))
        return None
    return float(value)


def character_state(loaded: CharacterState, *, baseline: CharacterState, source: str,
                    now: float, settings: Settings, user: Emotion | None,
                    thought_level: float | None) -> CharacterState:
    """EI calc (character): the empathy switch on `source`, then the thought's level."""
    if loaded.turn_time is None and loaded.user_time is None:
        loaded = baseline  # the first turn of the pair: the character starts from its baseline
    state = empathy_switch(
        loaded, "user" if source == "user" else "character", now,
        alpha=settings.empathy_alpha, nullpunkt_seconds=settings.eigenzeit_nullpunkt_seconds,
        user_arousal=user.arousal if (source == "user" and user is not None) else None,
        baseline=baseline)
    if source == "user" and user is not None:
        state = _labels_follow_user(state, user)
    state = raise_arousal(state, thought_level)
    # Four decimals: beyond them the float arithmetic only adds noise to the stored state.
    return msgspec.structs.replace(state, arousal=round(state.arousal, 4))


def _labels_follow_user(state: CharacterState, user: Emotion) -> CharacterState:
    changes: dict[str, Any] = {name: getattr(user, name) for name in _FOLLOWING
                               if getattr(user, name)}
    if user.emotion in EMPATHY:
        changes["emotion"] = EMPATHY[user.emotion]
    return msgspec.structs.replace(state, **changes)
