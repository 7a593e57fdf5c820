"""The nine EI dimensions (seed 000 §2.2, SPEC §4) — one struct for every layer that speaks
them, and the one table of their stored German names.

`Emotion` is what EI calc perceives of the user (path 1, travelling to path 2 in the user
event's payload under these names) and the base of the character's persisted state
(`app.memory.state.CharacterState`, which gives the dimensions the seed's first-turn
defaults). An empty label or a `None` arousal means "not perceived".

It lives beside `app.core.log` and `app.core.clock`, below every layer: the memory (the stored turn,
the state), the pipeline (EI calc, the dispatcher) and the model layer's offline perception
(`app.llm.offline`) all read it, and the model layer may not import the memory.

`STORED_NAMES` maps an English attribute to the seeds' German name where the two differ: a
stored Turn (`app.memory.turns`) and the offline model's answers use these names; the
`nova_state` hash keeps the English ones, as the seed writes them.
"""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec


class Emotion(msgspec.Struct, kw_only=True):
    """The nine EI dimensions; empty = not perceived."""

    emotion: str = ""
    arousal: float | None = None
    emotions_vector: str = ""
    mode: str = ""
    language_style: str = ""
    relationship_dynamic: str = ""
    tone: str = ""
    intent: str = ""
    prompt_topic: str = ""


class ListedEmotion(msgspec.Struct):
    """A base for what names intentions and topics as lists (the model's perception, a
    stored turn): their first entries are the dimensions `intent` and `prompt_topic`, so
    `copy_emotion` reads the nine from it. A subclass declares `intentions` and `topics`
    itself, where its wire shape puts them (fields declared here would come first)."""

    @property
    def intent(self) -> str:
        intentions: list[str] = self.intentions  # type: ignore[attr-defined]
        return intentions[0] if intentions else ""

    @property
    def prompt_topic(self) -> str:
        topics: list[str] = self.topics  # type: ignore[attr-defined]
        return topics[0] if topics else ""


EI_FIELDS: tuple[str, ...] = tuple(f.name for f in msgspec.structs.fields(Emotion))
LABELS: tuple[str, ...] = tuple(name for name in EI_FIELDS if name != "arousal")

# English attribute → the seeds' German field name (where they differ). A stored turn keeps
# `intent`/`prompt_topic` as the lists `intentionen`/`themen`; the perception adds its core
# summary and language.
STORED_NAMES: dict[str, str] = {
    "mode": "modus",
    "emotions_vector": "emotions_vektor",
    "language_style": "sprach_stil",
    "relationship_dynamic": "beziehungs_dynamik",
    "intentions": "intentionen",
    "topics": "themen",
    "core": "kern",
    "language": "sprache",
}

Carrier = TypeVar("Carrier", bound=msgspec.Struct)


def copy_emotion(source: Any, target: Carrier, **changes: Any) -> Carrier:
    """`target` with the nine dimensions of `source` (anything that carries them as
    attributes: an `Emotion`, a character state, a stored turn), then `changes` on top —
    the one copy; nobody lists the fields by hand. `target` is a struct with the nine
    as fields (`Emotion()` for a plain copy)."""
    values = {name: getattr(source, name) for name in EI_FIELDS}
    values.update(changes)
    return msgspec.structs.replace(target, **values)
