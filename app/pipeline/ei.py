"""EI calc: the user's perceived state (path 1) and the character's state (path 2).

User (path 1): the perception's nine EI dimensions as one `Emotion`; it is stored in the
user turn and travels to path 2 in the user event's payload (`UserPayload`, which extends
`Emotion`; seed 001 §3.1.1).

Character (path 2, seed 001 §4 — the empathy switch on `source`):
- `user` event: decay toward the character's baseline, the arousal moves toward the user's
  perceived arousal by `empathy_alpha`; the labels follow the user: the character's emotion
  answers the user's (`EMPATHY`), mode, tone, style and dynamic are the conversation's.
- `character` event (continue, impulse): decay only; labels stay.
Then a thought's own arousal (`gedanke_arousal`) raises the arousal when it is higher.
"""

from __future__ import annotations

from typing import Any

import msgspec

from app.core.emotion import EI_FIELDS, Emotion, copy_emotion
from app.core.settings import Settings
from app.memory.state import CharacterState, empathy_switch, raise_arousal
from app.pipeline.schemas import Perception
from app.pipeline.vocabulary import EventPayload, UserPayload

# How the character's emotion answers the user's (labels are never blended).
EMPATHY: dict[str, str] = {
    "trauer": "mitgefuehl",
    "angst": "fuersorge",
    "stress": "ruhe",
    "erschoepfung": "fuersorge",
    "wut": "ruhe",
    "ekel": "mitgefuehl",
    "freude": "freude",
    "begeisterung": "freude",
    "liebe": "zuneigung",
    "dankbarkeit": "freude",
    "ueberraschung": "neugier",
}
# The labels the character takes over from the user as they are (the emotion answers through
# `EMPATHY`; the emotions vector is the character's own).
_FOLLOWING = ("mode", "tone", "language_style", "relationship_dynamic", "intent", "prompt_topic")


def user_emotion(perception: Perception) -> Emotion:
    """EI calc (user): the perception's reading as the nine EI dimensions, its labels in
    lower case (a topic keeps its case: it is the user's word)."""
    read = copy_emotion(perception, Emotion())
    labels = {
        name: getattr(read, name).strip().lower()
        for name in EI_FIELDS
        if name not in ("arousal", "prompt_topic")
    }
    return msgspec.structs.replace(read, **labels, prompt_topic=read.prompt_topic.strip())


def perceived_user(payload: EventPayload) -> Emotion | None:
    """The user's perceived state an event brings: a user event's nine dimensions (read and
    checked as the payload's type where the event was read); None for a character event
    and for a user event that perceived nothing."""
    if not isinstance(payload, UserPayload):
        return None
    user = copy_emotion(payload, Emotion())
    return None if user == Emotion() else user


def character_state(
    loaded: CharacterState,
    *,
    baseline: CharacterState,
    source: str,
    now: float,
    settings: Settings,
    user: Emotion | None,
    thought_level: float | None,
) -> CharacterState:
    """EI calc (character): the empathy switch on `source`, then the thought's level."""
    if loaded.turn_time is None and loaded.user_time is None:
        loaded = baseline  # the first turn of the pair: the character starts from its baseline
    state = empathy_switch(
        loaded,
        "user" if source == "user" else "character",
        now,
        alpha=settings.empathy_alpha,
        nullpunkt_seconds=settings.eigenzeit_nullpunkt_seconds,
        user_arousal=user.arousal if (source == "user" and user is not None) else None,
        baseline=baseline,
    )
    if source == "user" and user is not None:
        state = _labels_follow_user(state, user)
    state = raise_arousal(state, thought_level)
    # Four decimals: beyond them the float arithmetic only adds noise to the stored state.
    return msgspec.structs.replace(state, arousal=round(state.arousal, 4))


def _labels_follow_user(state: CharacterState, user: Emotion) -> CharacterState:
    changes: dict[str, Any] = {
        name: getattr(user, name) for name in _FOLLOWING if getattr(user, name)
    }
    if user.emotion in EMPATHY:
        changes["emotion"] = EMPATHY[user.emotion]
    return msgspec.structs.replace(state, **changes)
