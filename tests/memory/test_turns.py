"""Turn: German wire names, complete writing, lenient reading of older records."""

from __future__ import annotations

import json
import logging

import msgspec
import pytest

from app.core.emotion import Emotion, copy_emotion
from app.memory.state import CharacterState
from app.memory.turns import Turn, TurnDecodeError, decode_turn, emotion_fields, encode_turn
from tests.golden import golden

WIRE_NAMES = [
    "turn_id", "rolle", "inhalt", "zeit", "herkunft", "nachrichten_ids", "intentionen",
    "emotion", "modus", "kern", "arousal", "emotions_vektor", "sprach_stil",
    "beziehungs_dynamik", "tone", "themen", "aktion_erledigt", "aktion_erfolgreich",
]

# The example of seed 000 §2.2: written before `herkunft`, `nachrichten_ids` and `themen`.
SEED_TURN = {
    "turn_id": "97b0d23ba3b1495ea6f44c0ce000a86b",
    "rolle": "user",
    "inhalt": "Der Wortlaut des Turns",
    "zeit": 1711234567.89,
    "intentionen": ["information_teilen", "emotionaler_ausdruck"],
    "emotion": "begeisterung",
    "modus": "alltag",
    "kern": "Destillierte Zusammenfassung des Inhalts",
    "arousal": 0.7,
    "emotions_vektor": "plateau",
    "sprach_stil": "locker",
    "beziehungs_dynamik": "vertrauen",
    "tone": "empathisch",
    "aktion_erledigt": True,
    "aktion_erfolgreich": True,
}


def full_turn() -> Turn:
    return Turn("t1", "assistant", "Hallo\nzweite Zeile", 1700000000.25,
                occasion="eigener_impuls", message_ids=["m1", "m2"], intentions=["gruss"],
                emotion="freude", mode="alltag", core="begrüßt", arousal=0.6, emotions_vector="steigend",
                language_style="locker", relationship_dynamic="vertrauen", tone="warm",
                topics=["wetter"], action_done=True, action_succeeded=False)


def test_encoding_writes_every_field_under_its_german_name() -> None:
    wire = json.loads(encode_turn(full_turn()))
    assert list(wire) == WIRE_NAMES
    assert wire["rolle"] == "assistant" and wire["inhalt"] == "Hallo\nzweite Zeile"
    assert wire["herkunft"] == "eigener_impuls" and wire["nachrichten_ids"] == ["m1", "m2"]
    assert wire["aktion_erledigt"] is True and wire["aktion_erfolgreich"] is False


def test_a_turn_carries_the_nine_ei_dimensions_two_of_them_as_lists() -> None:
    feeling = Emotion(emotion="freude", arousal=0.6, emotions_vector="steigend", mode="alltag",
                      language_style="locker", relationship_dynamic="vertrauen", tone="warm",
                      intent="gruss", prompt_topic="wetter")
    turn = Turn("t1", "assistant", "Hallo", 1.0, **emotion_fields(feeling))
    assert (turn.intentions, turn.topics) == (["gruss"], ["wetter"])
    assert copy_emotion(turn, Emotion()) == feeling  # and back: nothing lost, nothing added
    wire = json.loads(encode_turn(turn))
    assert (wire["modus"], wire["sprach_stil"], wire["themen"]) == ("alltag", "locker", ["wetter"])
    # "Not perceived" stays empty: no one-element list of an empty string.
    empty = Turn("t2", "user", "hi", 1.0, **emotion_fields(Emotion()))
    assert (empty.intentions, empty.topics, empty.arousal) == ([], [], None)
    assert copy_emotion(empty, Emotion()) == Emotion()


def test_a_minimal_turn_is_still_written_complete() -> None:
    wire = json.loads(encode_turn(Turn("t", "user", "hi", 1.0)))
    assert list(wire) == WIRE_NAMES
    assert wire["herkunft"] == "" and wire["arousal"] is None and wire["themen"] == []


def test_round_trip_is_exact() -> None:
    turn = full_turn()
    assert decode_turn(encode_turn(turn)) == turn
    assert decode_turn(encode_turn(turn).decode()) == turn


def test_the_seeds_turn_without_herkunft_loads_as_unknown_occasion() -> None:
    turn = decode_turn(json.dumps(SEED_TURN))
    assert turn.occasion == ""  # unknown, not "a reply"
    assert turn.content == "Der Wortlaut des Turns" and turn.arousal == 0.7
    assert turn.intentions == ["information_teilen", "emotionaler_ausdruck"]
    assert turn.action_done is True and turn.message_ids == []


def test_extra_fields_of_other_versions_are_ignored() -> None:
    record = dict(SEED_TURN, herkunft="antwort", zukunft={"x": 1}, salienz=0.9)
    assert decode_turn(json.dumps(record)).occasion == "antwort"


def test_nulls_and_numbers_as_strings_load() -> None:
    record = dict(SEED_TURN, emotion=None, kern=None, herkunft=None, arousal="0.25",
                  zeit="1711234567.5", intentionen=None)
    turn = decode_turn(json.dumps(record))
    assert (turn.emotion, turn.core, turn.occasion) == ("", "", "")
    assert turn.arousal == 0.25 and turn.time == 1711234567.5 and turn.intentions == []


def test_a_record_without_turn_id_time_or_content_still_loads() -> None:
    turn = decode_turn('{"rolle": "assistant"}')
    assert (turn.turn_id, turn.content, turn.time, turn.role) == ("", "", 0.0, "assistant")
    assert not turn.has_content


def test_unreadable_fields_fall_back_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    record = dict(SEED_TURN, herkunft="pixie", intentionen="nicht eine liste", arousal="hoch")
    with caplog.at_level(logging.WARNING):
        turn = decode_turn(json.dumps(record))
    assert turn.occasion == "" and turn.intentions == [] and turn.arousal is None
    assert turn.content == SEED_TURN["inhalt"]  # the turn itself is kept
    dropped = {r.fields["field"] for r in caplog.records if r.msg == "stored turn field dropped"}
    assert dropped == {"herkunft", "intentionen", "arousal"}


@pytest.mark.parametrize("raw", [
    "not json", "[1, 2]", '"text"', "{}", '{"rolle": "system", "inhalt": "x"}',
    '{"inhalt": "who said it?"}',
])
def test_hopeless_records_are_refused(raw: str) -> None:
    with pytest.raises(TurnDecodeError):
        decode_turn(raw)


def test_writers_must_give_the_required_fields() -> None:
    with pytest.raises(TypeError):
        Turn("t", "user")  # type: ignore[call-arg]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"turn_id": "t", "rolle": "bot", "inhalt": "x", "zeit": 1.0}, Turn)


def test_a_stored_turn_is_written_byte_for_byte_as_before() -> None:
    # The keys and their order are the stored record's (design §2): the shared EI base must not
    # move a field.
    user = Turn("t1", "user", "Ich hab heute\nden Job verloren", 1713700000.0,
                message_ids=["m1", "m2"], core="Job verloren", intentions=["Frage", "trost"],
                emotion="trauer", arousal=0.8, emotions_vector="schwer", mode="tiefgang",
                language_style="knapp", relationship_dynamic="nähe", tone="leise",
                topics=["Job"])
    assert encode_turn(user) == golden("turn_user")
    answer = Turn("t1", "assistant", "Das tut mir leid.", 1713700001.5, occasion="antwort",
                  message_ids=["m1"], action_done=True, action_succeeded=False,
                  **emotion_fields(CharacterState(emotion="mitgefuehl", arousal=0.6,
                                                  tone="sanft")))
    assert encode_turn(answer) == golden("turn_assistant")
    assert encode_turn(Turn("", "user", "", 0.0)) == golden("turn_minimal")
    for name in ("turn_user", "turn_assistant", "turn_minimal"):
        assert encode_turn(decode_turn(golden(name))) == golden(name)
