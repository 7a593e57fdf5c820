"""EI calc on real numbers, through the real server: the empathy switch on the event's
source (seed 001 §4), decay toward the character's baseline, and a thought's own arousal
(`gedanke_arousal`) that raises the state — or is rejected, never clamped."""

from __future__ import annotations

import logging
import math
import time

import msgspec
import pytest

from app.api.app_keys import REDIS, RUNTIME, SETTINGS
from app.memory import keys
from app.memory.stance import compute_stance, load_stance
from app.memory.state import CharacterState, ThoughtArousalError, load_state, save_state
from app.pipeline import ei
from app.pipeline.schemas import Perception
from app.pipeline.stimulus import thought_level
from app.pipeline.vocabulary import Continue
from app.runtime.events import continue_event, impulse_event, user_event
from app.runtime.wire import decode_event, encode
from tests.pipeline_support import fake_app, last_user_message, open_chat

ALPHA = 0.3


async def test_a_user_event_moves_toward_the_user_a_character_event_only_decays(
        fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    now = time.time()
    await save_state(app[REDIS], "local", "nova",
                     CharacterState(arousal=0.3, turn_time=now, user_time=now))
    fake_model.script("perception", {"emotion": "begeisterung", "arousal": 0.9,
                                     "mode": "alltag", "tone": "herzlich"})

    sent = await chat.send("Ich hab die Prüfung bestanden!!")
    reply = await chat.response(sent)
    await chat.settle()

    assert app[SETTINGS].empathy_alpha == ALPHA
    moved = 0.3 + ALPHA * (0.9 - 0.3)
    assert reply["arousal"] == pytest.approx(moved, abs=1e-3)
    assert reply["emotion"] == "freude"  # the character's answer to the user's excitement
    state = await chat.get("/api/characters/nova/state")
    assert state["arousal"] == pytest.approx(moved, abs=1e-3)
    assert state["emotion"] == "freude" and state["tone"] == "herzlich"
    assert state["nutzer_zeit"] >= now

    turn_id = await app[RUNTIME].submit_impulse("local", "nova", "Ich denke an die Prüfung.")
    impulse = await chat.response(turn_id=turn_id)
    await chat.settle()

    # Source character: decay only (a second of quiet), no move toward the user's 0.9.
    assert impulse["arousal"] == pytest.approx(moved, abs=1e-3)
    assert impulse["origin"] == "own_impulse"
    after = await chat.get("/api/characters/nova/state")
    assert after["nutzer_zeit"] == state["nutzer_zeit"]  # no user event: the user clock stays
    assert after["turn_zeit"] > state["turn_zeit"]


async def test_quiet_decays_the_state_toward_the_baseline(fake_model, make_settings,
                                                         aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    half = app[SETTINGS].eigenzeit_nullpunkt_seconds / 2
    await save_state(app[REDIS], "local", "nova",
                     CharacterState(emotion="freude", arousal=0.9, turn_time=time.time() - half))

    turn_id = await app[RUNTIME].submit_impulse("local", "nova", "Was für ein Tag.")
    impulse = await chat.response(turn_id=turn_id)

    assert impulse["arousal"] == pytest.approx(0.5 + (0.9 - 0.5) / 2, abs=1e-3)
    assert impulse["emotion"] == "freude"  # labels switch only at the null point


@pytest.mark.parametrize("level, expected", [(0.95, 0.95), (0.1, 0.5), (None, 0.5)])
async def test_a_thoughts_arousal_raises_the_state_when_higher(
        fake_model, make_settings, aiohttp_client, level, expected):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)

    turn_id = await app[RUNTIME].submit_impulse("local", "nova", "Ein Gedanke.", arousal=level)
    impulse = await chat.response(turn_id=turn_id)

    assert impulse["arousal"] == pytest.approx(expected, abs=1e-3)
    responder = last_user_message(fake_model.chats("responder")[0])
    assert "### Dein eigener Gedanke (niemand hat etwas gesagt)\nEin Gedanke." in responder
    thought = responder.split("### Dein eigener Gedanke")[1].split("### Anweisung")[0]
    assert "USER" not in thought


@pytest.mark.parametrize("bad", [True, False, "0.9", "hoch", 1.5, -0.1, math.nan, [0.5]])
async def test_an_invalid_thought_arousal_is_rejected_where_it_enters(
        fake_model, make_settings, aiohttp_client, bad):
    app = fake_app(fake_model, make_settings)
    await open_chat(aiohttp_client, app)

    with pytest.raises(ThoughtArousalError):
        await app[RUNTIME].submit_impulse("local", "nova", "Ein Gedanke.", arousal=bad)

    assert await app[REDIS].llen(keys.event_queue("local", "nova")) == 0


def stored(event, **payload_changes) -> object:
    """`event` as a user's Redis holds it, with `payload_changes` made to the stored keys."""
    record = msgspec.json.decode(encode(event))
    record["payload"].update(payload_changes)
    return decode_event(msgspec.json.encode(record))


@pytest.mark.parametrize("bad", [True, "0.9", 1.5, -0.1, [0.5]])
def test_a_stored_invalid_level_counts_as_no_level_and_is_reported(bad, caplog):
    caplog.set_level(logging.WARNING)
    event = stored(impulse_event("local", "nova", "Ein Gedanke."), gedanke_arousal=bad)
    assert thought_level(event.payload) is None
    [report] = [r for r in caplog.records if r.getMessage() == "stored event field dropped"]
    assert report.fields["field"] == "gedanke_arousal"
    state = ei.character_state(CharacterState(arousal=0.4, turn_time=time.time()),
                               baseline=CharacterState(), source="character",
                               now=time.time(), settings=_settings(), user=None,
                               thought_level=thought_level(event.payload))
    assert state.arousal == pytest.approx(0.4, abs=1e-3)  # never clamped to 1.0 or 0.0


def test_no_level_is_none_and_a_valid_level_is_read():
    impulse = impulse_event("local", "nova", "Ein Gedanke.")
    assert thought_level(stored(impulse).payload) is None
    assert thought_level(stored(impulse, gedanke_arousal=0.7).payload) == 0.7
    assert thought_level(stored(impulse, gedanke_arousal=1).payload) == 1.0
    retry = continue_event(stored(impulse, gedanke_arousal=0.6), Continue(retry="thinker"))
    assert thought_level(stored(retry).payload) == 0.6  # the level travels with the retry
    user = user_event("local", "nova", "t", ["m"], "Hallo")
    assert thought_level(stored(user).payload) is None  # the user's words carry no level


def test_the_user_emotion_travels_in_the_payload_and_bad_values_are_dropped(caplog):
    user = ei.user_emotion(Perception(emotion="Trauer", arousal=0.8, intentions=["frage"],
                                      topics=["job", "geld"], mode="tiefgang"))
    event = user_event("local", "nova", "t", ["m"], "Hallo", user, "de")
    payload = msgspec.json.decode(encode(event))["payload"]
    assert payload["emotion"] == "trauer" and payload["intent"] == "frage"
    assert payload["prompt_topic"] == "job" and payload["mode"] == "tiefgang"
    assert ei.perceived_user(stored(event).payload) == user
    impulse = impulse_event("local", "nova", "Ein Gedanke.")
    assert ei.perceived_user(stored(impulse).payload) is None  # a character event has none
    nothing = user_event("local", "nova", "t", ["m"], "Hallo")
    assert ei.perceived_user(stored(nothing).payload) is None  # nothing perceived
    for bad in (True, 3, "0.8"):
        read = ei.perceived_user(stored(event, arousal=bad).payload)
        assert read == msgspec.structs.replace(user, arousal=None)


def test_the_first_turn_starts_from_the_characters_baseline():
    baseline = CharacterState(emotion="ruhe", arousal=0.35, mode="tiefgang")
    state = ei.character_state(CharacterState(), baseline=baseline, source="character",
                               now=time.time(), settings=_settings(), user=None,
                               thought_level=None)
    assert (state.emotion, state.arousal, state.mode) == ("ruhe", 0.35, "tiefgang")


def _settings():
    from app.core.settings import defaults
    return defaults(data_dir="/nonexistent")


async def test_the_state_is_written_once_at_the_end_of_the_run(fake_model, make_settings,
                                                              aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    sent = await chat.send("Hallo")
    reply = await chat.response(sent)
    stored = await load_state(app[REDIS], "local", "nova")
    assert stored.arousal == pytest.approx(reply["arousal"]) and stored.turn_time is not None


async def test_every_character_run_writes_its_stance(fake_model, make_settings, aiohttp_client):
    """`haltung` is written by every run with the state it ends with: computed from the
    labels the character took over from the user, then — the labels gone — marked as not
    computed, with its reason and no old quantity left standing."""
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    fake_model.script("perception", {"emotion": "trauer", "arousal": 0.7, "mode": "tiefgang",
                                     "relationship_dynamic": "vertrauen", "tone": "empathisch"})

    sent = await chat.send("Mir geht es heute nicht gut.")
    reply = await chat.response(sent)
    await chat.settle()

    stored = await app[REDIS].hgetall(keys.haltung("local", "nova"))
    assert stored["turn_id"] == reply["turn_id"] and stored["gerechnet"] == "1"
    assert (stored["tiefe"], stored["naehe"]) == ("0.8", "0.7")  # mode, dynamic from the user
    assert stored["grund"] == "tiefe aus modus=tiefgang; naehe aus beziehungs_dynamik=vertrauen"
    state = await load_state(app[REDIS], "local", "nova")
    assert float(stored["energie"]) == pytest.approx(state.arousal)
    answered_at = (await chat.session())[-1]["zeit"]  # written with the answer
    assert stored["cluster"] == "zugewandt" and float(stored["zeit"]) == answered_at
    assert await load_stance(app[REDIS], "local", "nova") == compute_stance(
        state, turn_id=reply["turn_id"], now=answered_at)

    await save_state(app[REDIS], "local", "nova", msgspec.structs.replace(
        state, mode="", relationship_dynamic="", tone=""))
    turn_id = await app[RUNTIME].submit_impulse("local", "nova", "Ob es ihm besser geht?")
    await chat.response(turn_id=turn_id)
    await chat.settle()

    stored = await app[REDIS].hgetall(keys.haltung("local", "nova"))
    assert stored["turn_id"] == turn_id and stored["gerechnet"] == "0"
    assert stored["grund"].startswith("kein raum: raum_tiefe fehlt")
    assert stored["cluster"] == "" and not {"energie", "tiefe", "naehe"} & set(stored)
