"""The nine EI dimensions (seed 000 §2.2, design §4): their one base declaration, the shapes
that carry them, and the one table of their stored German names.

`Emotion` declares the nine: `emotion, arousal, emotions_vector, mode, language_style,
relationship_dynamic, tone, intent, prompt_topic`; an empty label or a `None` arousal means
"not perceived". What carries them flat extends it (msgspec struct inheritance):

- `app.memory.state.CharacterState` — the character's persisted state (`nova_state`), with
  the seed's first-turn defaults, the space axes and the clocks;
- `app.pipeline.vocabulary.UserPayload` — the user event's payload: what path 1 perceived
  of the user, travelling to path 2 (seed 001 §3.1.1), then the block's words and ids.

What names intentions and topics as lists — the model's perception, a stored turn — reads
`intent` and `prompt_topic` as their first entries (`ListedEmotion`), and its field order is
a wire contract that interleaves the dimensions with its own fields. msgspec puts inherited
fields first, so such a struct can extend a base only where its order starts with the base:

- `PerceivedEmotion` declares the listed shape in the order of the perception schema the
  model is sent; `app.pipeline.schemas.Perception` (that schema) and
  `app.llm.offline.handlers.LexiconPerception` (the offline model's reading) extend it;
- `app.memory.turns.Turn` stores them among its own fields, in the order of the stored
  record (design §2: `turn_id, rolle, …, intentionen, emotion, modus, kern, arousal, …`), so it
  declares them itself. `tests/core/test_emotion.py` holds `PerceivedEmotion` and `Turn` to
  the base: the same dimensions, types and defaults.

`copy_emotion` is the one copy between any two of them.

It lives beside `app.core.log` and `app.core.clock`, below every layer: the memory (the
stored turn, the state), the pipeline (EI calc, the event payload, the dispatcher) and the
model layer's offline perception (`app.llm.offline`) all read it, and the model layer may
not import the memory.

`STORED_NAMES` maps an English attribute to the seeds' German name where the two differ: a
stored Turn (`app.memory.turns`) and the offline model's answers use these names; the
`nova_state` hash and the event payload keep the English ones, as the seeds write them.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import msgspec

# A level in [0.0, 1.0] (an arousal, an importance): what msgspec checks where one is read.
UnitFloat = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]


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
    """A base for what names intentions and topics as lists: their first entries are the
    dimensions `intent` and `prompt_topic`, so `copy_emotion` reads the nine from it. A
    subclass declares `intentions` and `topics` itself, where its wire shape puts them
    (fields declared here would come first)."""

    @property
    def intent(self) -> str:
        intentions: list[str] = self.intentions  # type: ignore[attr-defined]  # each subclass declares it
        return intentions[0] if intentions else ""

    @property
    def prompt_topic(self) -> str:
        topics: list[str] = self.topics  # type: ignore[attr-defined]  # each subclass declares it
        return topics[0] if topics else ""


class PerceivedEmotion(ListedEmotion, kw_only=True):
    """How someone's words come across (seed 000 §2.2): the nine dimensions — intentions
    and topics as lists —, the core summary and the language, in the order the perception
    schema lists them (the model reads that order; `tests/pipeline/test_schemas.py` holds
    it byte for byte)."""

    emotion: str = ""
    arousal: UnitFloat | None = None
    intentions: list[str] = msgspec.field(default_factory=list)
    mode: str = ""
    core: str = ""
    emotions_vector: str = ""
    language_style: str = ""
    relationship_dynamic: str = ""
    tone: str = ""
    topics: list[str] = msgspec.field(default_factory=list)
    language: str = ""


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
    attributes: an `Emotion`, a character state, a stored turn, a perception), then
    `changes` on top — the one copy; nobody lists the fields by hand. `target` is a struct
    with the nine as fields (`Emotion()` for a plain copy)."""
    values = {name: getattr(source, name) for name in EI_FIELDS}
    values.update(changes)
    return msgspec.structs.replace(target, **values)
