"""The nine EI dimensions: one base declaration (`Emotion`), the shapes that extend it, and
the two whose wire order keeps them from extending it held to it here."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from app.core.emotion import (
    EI_FIELDS,
    Emotion,
    ListedEmotion,
    PerceivedEmotion,
    UnitFloat,
    copy_emotion,
)
from app.llm.offline.handlers import LexiconPerception
from app.memory.state import CharacterState
from app.memory.turns import Turn, emotion_fields
from app.pipeline.schemas import Perception
from app.pipeline.vocabulary import UserPayload

LISTED = {"intent": "intentions", "prompt_topic": "topics"}


def declared(kind: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    return {f.name: f for f in msgspec.structs.fields(kind)}


def test_the_flat_carriers_extend_the_base_and_keep_its_order():
    base = list(EI_FIELDS)
    for kind in (CharacterState, UserPayload):
        assert issubclass(kind, Emotion)
        assert list(kind.__struct_fields__[:len(base)]) == base, kind.__name__


def test_the_perception_and_the_lexicon_extend_the_listed_shape():
    for kind in (Perception, LexiconPerception):
        assert issubclass(kind, PerceivedEmotion)
        assert kind.__struct_fields__ == PerceivedEmotion.__struct_fields__, kind.__name__


def test_the_listed_shapes_declare_the_nine_as_the_base_does():
    # `PerceivedEmotion` and `Turn` must place the dimensions among their own fields (their
    # wire order), so they declare them; each must match the base, or a change to the base
    # would miss them.
    base = declared(Emotion)
    for kind in (PerceivedEmotion, Turn):
        assert issubclass(kind, ListedEmotion)
        fields = declared(kind)
        for name, field in base.items():
            if name in LISTED:
                listed = fields[LISTED[name]]
                assert (listed.type, listed.default_factory) == (list[str], list), name
                continue
            mine = fields[name]
            assert mine.default == field.default, (kind.__name__, name)
            expected = (field.type, UnitFloat | None) if name == "arousal" else (field.type,)
            assert mine.type in expected, (kind.__name__, name, mine.type)


TEXT = st.text(max_size=6)
FEELINGS = st.builds(Emotion, emotion=TEXT, arousal=st.one_of(st.none(), st.floats(0, 1)),
                     emotions_vector=TEXT, mode=TEXT, language_style=TEXT,
                     relationship_dynamic=TEXT, tone=TEXT, intent=TEXT, prompt_topic=TEXT)


@given(FEELINGS)
def test_every_carrier_gives_back_the_nine_it_was_given(feeling):
    # The one copy (`copy_emotion`) reads the nine from each carrier, the listed ones
    # through the first entries of their lists.
    listed = emotion_fields(feeling)
    carriers = [CharacterState(), UserPayload(), Emotion()]
    for carrier in carriers:
        assert copy_emotion(copy_emotion(feeling, carrier), Emotion()) == feeling
    turn = Turn("t", "user", "", 0.0, **listed)
    perceived = PerceivedEmotion(**listed)
    for carrier in (turn, perceived):
        assert copy_emotion(carrier, Emotion()) == feeling
