"""Less model work between the user's message and the delivered reply (issue 36): counted on
the fake model server, by the order in which its requests arrived and the reply was seen.
Speed itself is measured in bench/reply.py, not here."""

from __future__ import annotations

import threading

import pytest

from app.api.app_keys import REDIS, SETTINGS
from app.memory.session import SessionMemory
from app.memory.short_term import ShortTermMemory
from tests.fakemodel import Reply
from tests.pipeline_support import fake_app, open_chat, purposes


async def test_an_ordinary_sentence_asks_no_router(fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, route_by_rules=True))

    sent = await chat.send("Heute war ein langer Tag bei der Arbeit, ich bin müde.")
    await chat.response(sent)
    await chat.settle()

    assert "router" not in purposes(fake_model)
    assert "responder" in purposes(fake_model)


async def test_a_clear_command_asks_no_router_and_acts(fake_model, make_settings,
                                                       aiohttp_client):
    fake_model.script("agent_lists", {"list_name": "Einkaufsliste", "add": ["Milch"]})
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, route_by_rules=True))

    sent = await chat.send("Setz Milch auf die Einkaufsliste")
    await chat.response(sent)
    await chat.settle()

    assert "router" not in purposes(fake_model)
    assert "agent_lists" in purposes(fake_model)


async def test_an_unclear_sentence_still_asks_the_router(fake_model, make_settings,
                                                         aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, route_by_rules=True))

    sent = await chat.send("Heute war ich im Park und setz Milch auf die Liste")
    await chat.response(sent)
    await chat.settle()

    assert "router" in purposes(fake_model)


async def test_the_characters_salience_is_asked_after_delivery_and_lands_for_the_next_turn(
        fake_model, make_settings, aiohttp_client):
    held = threading.Event()
    fake_model.script("salience_character", Reply(
        {"importance": 0.9, "segments": ["Nova hat nach dem Tag gefragt"],
         "emotion": "zuneigung"}, hold=held))
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Wie war dein Tag?")
    await fake_model.wait_requests(1, "salience_character")
    answer = await chat.response(sent)  # delivered while the salience is still held
    state = await chat.get("/api/characters/nova/state")
    assert state["emotion"] == answer["emotion"] != "zuneigung"
    assert chat.of_type("character_state") == []  # nothing moved yet
    held.set()
    await chat.settle()

    after = await chat.get("/api/characters/nova/state")
    assert after["emotion"] == "zuneigung"  # what the next turn starts from
    # Every tab is told, so its state panel follows without a reload.
    told = await chat.wait_for(lambda m: m["type"] == "character_state")
    assert told[0]["turn_id"] == answer["turn_id"]
    assert told[0]["emotion"] == "zuneigung"
    assert told[0]["arousal"] == pytest.approx(float(after["arousal"]))
    entries = await ShortTermMemory(app[REDIS], app[SETTINGS]).recent("local", "nova", 10)
    assert [e.text for e in entries if e.role == "assistant"] == ["Nova hat nach dem Tag gefragt"]
    assert [t["inhalt"] for t in await chat.session()][-1] == answer["text"]  # unchanged


async def test_a_reset_before_the_late_salience_leaves_nothing_behind(
        fake_model, make_settings, aiohttp_client):
    held = threading.Event()
    fake_model.script("salience_character", Reply(
        {"importance": 0.9, "segments": ["Etwas Wichtiges"]}, hold=held))
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Wie war dein Tag?")
    await chat.response(sent)
    await SessionMemory(app[REDIS], app[SETTINGS]).reset("local", "nova")
    held.set()
    await chat.settle()

    entries = await ShortTermMemory(app[REDIS], app[SETTINGS]).recent("local", "nova", 10)
    assert [e for e in entries if e.role == "assistant"] == []


AFTER = {"route_by_rules": True, "user_salience_after_delivery": True}


async def test_an_ordinary_sentence_makes_at_most_three_calls_before_delivery(
        fake_model, make_settings, aiohttp_client):
    held = threading.Event()
    fake_model.script("salience", Reply({"importance": 0.6, "segments": ["langer Tag"]},
                                        hold=held))
    app = fake_app(fake_model, make_settings, **AFTER)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Heute war ein langer Tag bei der Arbeit, ich bin müde.")
    await chat.response(sent)  # delivered while the user's salience is held
    before = purposes(fake_model)
    held.set()
    await chat.settle()

    assert before == ["perception", "responder", "thinker", "salience"]
    assert purposes(fake_model) == [*before, "salience_character"]
    entries = await ShortTermMemory(app[REDIS], app[SETTINGS]).recent("local", "nova", 10)
    assert [e.text for e in entries if e.role == "user"] == ["langer Tag"]
    [salience] = fake_model.chats("salience")
    assert "langer Tag bei der Arbeit" in salience.messages[-1]["content"]


async def test_without_an_active_character_the_users_salience_still_lands(
        fake_model, make_settings, aiohttp_client, data_dir):
    (data_dir / "characters").mkdir()
    luna = data_dir / "characters" / "luna.toml"
    luna.write_text('id = "luna"\nname = "Luna"\nlanguage = "de"\npersona = "Du bist Luna."\n',
                    encoding="utf-8")

    def perceive_and_deactivate(request):  # Luna is taken away while path 1 runs
        luna.unlink()
        return {"emotion": "freude", "core": "Der Mensch grüßt Luna."}
    fake_model.script("perception", perceive_and_deactivate)
    fake_model.script("salience", {"importance": 0.9, "segments": ["Der Mensch grüßt Luna."]})
    app = fake_app(fake_model, make_settings, **AFTER)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Hey Luna!", character_id="luna")
    failed = await chat.failure(sent)
    await chat.settle()

    assert failed["reason"] == "no_active_character"
    entries = await ShortTermMemory(app[REDIS], app[SETTINGS]).recent("local", "luna", 10)
    assert [e.text for e in entries] == ["Der Mensch grüßt Luna."]


def overlap(a, b) -> bool:
    """Were the two chat requests at the server at the same time?"""
    return a.at < b.ended and b.at < a.ended


@pytest.mark.parametrize("told", ["props", "setting"])
async def test_the_two_saliences_run_at_once_where_the_server_has_two_slots(
        fake_model, make_settings, aiohttp_client, told):
    # llama.cpp says its slots under /props; a server that cannot tell is told by the setting.
    if told == "props":
        fake_model.total_slots = 2
        more = {}
    else:
        more = {"model_concurrency": 2}
    held = threading.Event()
    fake_model.script("salience", Reply({"importance": 0.1}, hold=held))
    app = fake_app(fake_model, make_settings, **AFTER, **more)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Heute war ein langer Tag bei der Arbeit, ich bin müde.")
    await chat.response(sent)
    await fake_model.wait_requests(1, "salience_character")  # while the user's is held
    held.set()
    await chat.settle()

    [users] = fake_model.chats("salience")
    [characters] = fake_model.chats("salience_character")
    assert overlap(users, characters)
    assert fake_model.max_in_flight == 2


async def test_the_two_saliences_run_one_after_the_other_where_the_server_has_one_slot(
        fake_model, make_settings, aiohttp_client):
    fake_model.total_slots = 1
    fake_model.script("salience", Reply({"importance": 0.1}, delay=0.2))
    app = fake_app(fake_model, make_settings, **AFTER, model_concurrency=4)  # the server wins
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Heute war ein langer Tag bei der Arbeit, ich bin müde.")
    await chat.response(sent)
    await chat.settle()

    [users] = fake_model.chats("salience")
    [characters] = fake_model.chats("salience_character")
    assert not overlap(users, characters) and users.ended <= characters.at
    assert fake_model.max_in_flight == 1
