"""The seven scenarios of seed 001 §6, end to end through the real server: real runtime,
real Redis and SQLite, the fake model server scripted per purpose, a real WebSocket.

Each test states what the user sees (the responses and the ids they name), what the
character did (lists, reminders, follow-ups) and what was kept (session turns, marks).
"""

from __future__ import annotations

import datetime as dt
import logging

from app.api.app_keys import DB, REDIS, RUNTIME, SETTINGS
from app.memory import keys
from app.memory.lists import ListStore
from app.memory.message_log import MessageLog
from app.memory.session import SessionMemory
from app.memory.short_term import ShortTermMemory
from tests.pipeline_support import (
    fake_app,
    hold_pair,
    last_user_message,
    open_chat,
    purposes,
    system_message,
)

PATH1 = ["state", "perception", "enricher", "ei_calc", "salience", "dispatcher"]
PATH2_PLAIN = ["state", "enricher", "ei_calc", "router", "conversation_vector", "responder",
               "thinker", "tribunal", "salience", "dispatcher"]


def tomorrow_at_nine() -> str:
    now = dt.datetime.now().astimezone()
    return (now + dt.timedelta(days=1)).replace(hour=9, minute=0, second=0,
                                                microsecond=0).isoformat()


async def test_6_1_simple_chat(fake_model, make_settings, aiohttp_client):
    fake_model.script("perception", {"emotion": "neutral", "arousal": 0.4,
                                     "intentions": ["frage", "smalltalk"], "mode": "alltag",
                                     "core": "Der Mensch fragt, wie es Nova geht.",
                                     "tone": "herzlich", "topics": ["befinden"],
                                     "language": "de"})
    fake_model.script("salience", {"importance": 0.1, "segments": []})
    fake_model.script("responder", "Gut, danke! Und wie geht es dir?")
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    sent = await chat.send("Wie geht's dir?")

    answer = await chat.response(sent)
    await chat.settle()

    assert answer["text"] == "Gut, danke! Und wie geht es dir?"
    assert answer["origin"] == "reply" and answer["message_ids"] == [sent]
    # Path 1: two model calls; path 2 without an action: router, responder, thinker, salience.
    assert purposes(fake_model) == ["perception", "salience", "router", "responder", "thinker",
                                    "salience_character"]
    assert chat.stages(answer["turn_id"]) == PATH1 + PATH2_PLAIN
    responses = [m for m in chat.of_type("character_response")
                 if m["turn_id"] == answer["turn_id"]]
    assert len(responses) == 1  # no self-event
    user, nova = await chat.session()
    assert user["rolle"] == "user" and user["inhalt"] == "Wie geht's dir?"
    assert user["nachrichten_ids"] == [sent] and user["turn_id"] == answer["turn_id"]
    assert (user["emotion"], user["arousal"], user["modus"], user["kern"]) == (
        "neutral", 0.4, "alltag", "Der Mensch fragt, wie es Nova geht.")
    assert user["intentionen"] == ["frage", "smalltalk"] and user["themen"] == ["befinden"]
    assert nova["rolle"] == "assistant" and nova["herkunft"] == "antwort"
    assert nova["inhalt"] == answer["text"] and nova["nachrichten_ids"] == [sent]
    # The responder spoke from Nova's persona and read the history as one rendered block.
    responder = fake_model.chats("responder")[0]
    assert "Du bist Nova" in system_message(responder)
    assert "[1] USER (neutral): Wie geht's dir?" in last_user_message(responder)


async def test_6_2_task_with_a_question_and_resume(fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    lists = ListStore(app[REDIS], "local", "nova")
    await lists.apply("Wocheneinkauf", add=["Brot"])
    await lists.apply("Drogerie", add=["Shampoo"])
    fake_model.script("router", {"needs_action": True, "agents": ["lists"]},
                      {"answers_pending": True})
    fake_model.script("agent_lists", {"list_name": "Einkaufsliste", "add": ["Milch"]},
                      {"list_name": "Wocheneinkauf"})
    fake_model.script("responder", "Auf welche Liste – Wocheneinkauf oder Drogerie?",
                      "Milch steht jetzt auf dem Wocheneinkauf.")

    first = await chat.send("Setz Milch auf die Einkaufsliste")
    question = await chat.response(first)
    await chat.settle()

    assert question["text"] == "Auf welche Liste – Wocheneinkauf oder Drogerie?"
    asked = last_user_message(fake_model.chats("responder")[0])
    assert "### Deine Rückfrage" in asked and "„Wocheneinkauf“ oder „Drogerie“" in asked
    assert "Milch" not in [i for lst in await chat.get("/api/characters/nova/lists")
                           for i in lst["items"]]
    parked = await app[REDIS].lrange(keys.event_awaiting("local", "nova"), 0, -1)
    assert len(parked) == 1 and "pending_agent" in parked[0]
    user_turn = (await chat.session())[0]
    assert user_turn.get("aktion_erledigt") is None  # a question leaves the request open

    second = await chat.send("Wocheneinkauf")
    done = await chat.response(second)
    await chat.settle()

    assert done["text"] == "Milch steht jetzt auf dem Wocheneinkauf."
    by_name = {lst["name"]: lst["items"] for lst in await chat.get("/api/characters/nova/lists")}
    assert by_name == {"Wocheneinkauf": ["Brot", "Milch"], "Drogerie": ["Shampoo"]}
    resume = fake_model.chats("agent_lists")[1]
    assert "### Offene Rückfrage" in last_user_message(resume)
    assert "### Offene Rückfrage" in last_user_message(fake_model.chats("router")[1])
    assert fake_model.chats("planner") == []  # the resume goes straight to the agent
    told = last_user_message(fake_model.chats("responder")[1])
    assert "Milch steht jetzt auf der Liste „Wocheneinkauf“." in told
    turns = await chat.session()
    request, _, answer, _ = turns
    assert (request["aktion_erledigt"], request["aktion_erfolgreich"]) == (True, True)
    assert (answer["aktion_erledigt"], answer["aktion_erfolgreich"]) == (True, True)
    assert await app[REDIS].llen(keys.event_awaiting("local", "nova")) == 0
    assert len([m for m in chat.of_type("character_response")
                if m["turn_id"] == done["turn_id"]]) == 1  # no self-event


async def test_6_3_two_tasks_in_one_message(fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    due = tomorrow_at_nine()
    fake_model.script("router", {"needs_action": True, "agents": ["lists", "reminders"]})
    fake_model.script("planner", {"steps": [
        {"agent": "lists", "task": "Setz Milch auf die Liste"},
        {"agent": "reminders", "task": "erinnere mich morgen an den Zahnarzt"}]})
    fake_model.script("agent_lists", {"list_name": "Einkaufsliste", "add": ["Milch"]})
    fake_model.script("agent_reminders", {"text": "Zahnarzt", "due_at": due})
    fake_model.script("responder", "Milch steht drauf, und die Erinnerung ist eingestellt.")

    sent = await chat.send("Setz Milch auf die Liste und erinnere mich morgen an den Zahnarzt")
    answer = await chat.response(sent)
    await chat.settle()

    assert answer["text"] == "Milch steht drauf, und die Erinnerung ist eingestellt."
    stages = chat.stages(answer["turn_id"])
    assert stages[stages.index("planner"):stages.index("responder")] == [
        "planner", "lists", "reminders", "conversation_vector"]
    assert purposes(fake_model)[2:] == ["router", "planner", "agent_lists", "agent_reminders",
                                        "responder", "thinker", "salience_character"]
    lists = await chat.get("/api/characters/nova/lists")
    assert [(item["name"], item["items"]) for item in lists] == [("Einkaufsliste", ["Milch"])]
    [reminder] = await chat.get("/api/characters/nova/reminders")
    assert reminder["text"] == "Zahnarzt" and reminder["status"] == "pending"
    assert reminder["due_at"] == dt.datetime.fromisoformat(due).timestamp()
    assert reminder["trigger_turn_id"] == answer["turn_id"]
    told = last_user_message(fake_model.chats("responder")[0])
    assert "Milch steht jetzt auf der Liste „Einkaufsliste“." in told
    assert "Ich erinnere dich am" in told and "an „Zahnarzt“" in told
    user_turn = (await chat.session())[0]
    assert (user_turn["aktion_erledigt"], user_turn["aktion_erfolgreich"]) == (True, True)
    assert len([m for m in chat.of_type("character_response")
                if m["turn_id"] == answer["turn_id"]]) == 1


async def test_6_4_a_commitment_leads_to_a_continue_run(fake_model, make_settings,
                                                       aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    fake_model.script("responder", "Gute Frage – ich werde das für dich recherchieren.",
                      "Ich habe nachgesehen: Die Bibliothek hat sonntags zu.")
    fake_model.script("thinker", {"commitment": True, "intent": "Öffnungszeiten recherchieren"})

    sent = await chat.send("Hat die Bibliothek sonntags offen?")
    first = await chat.response(sent)
    second = await chat.response(sent, origin="continue")
    await chat.settle()

    assert first["origin"] == "reply" and second["origin"] == "continue"
    assert second["turn_id"] == first["turn_id"] and second["message_ids"] == [sent]
    assert second["text"] == "Ich habe nachgesehen: Die Bibliothek hat sonntags zu."
    # The continue run asks the router again: it recognizes the commitment.
    router_prompts = [last_user_message(r) for r in fake_model.chats("router")]
    assert len(router_prompts) == 2
    assert "### Du wolltest noch etwas sagen\nÖffnungszeiten recherchieren" in router_prompts[1]
    turns = await chat.session()
    assert [(t["rolle"], t["herkunft"]) for t in turns] == [
        ("user", ""), ("assistant", "antwort"), ("assistant", "fortsetzung")]
    assert turns[2]["turn_id"] == first["turn_id"]
    # The session carries the one table the UI shows a stored answer with: each maps back to
    # the origin it was delivered with live.
    origins = (await chat.get("/api/characters/nova/session"))["origins"]
    assert [origins[t["herkunft"]] for t in turns[1:]] == [first["origin"], second["origin"]]


async def test_6_5_three_quick_messages_are_perceived_and_answered_as_one(
        fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    fake_model.script("responder", "Schade! Dann verschieben wir es.")
    marker = await hold_pair(app)  # a turn is running: the messages wait in the queue
    texts = ["Hey", "Achso, ich wollte sagen...", "...dass ich morgen nicht kann"]
    sent = [await chat.send(text) for text in texts]
    await app[REDIS].delete(marker)
    app[RUNTIME].notify(keys.pair_id("local", "nova"))

    answer = await chat.response(sent[0])
    await chat.settle()

    assert answer["message_ids"] == sent
    assert purposes(fake_model).count("perception") == 1
    assert purposes(fake_model).count("responder") == 1
    perceived = last_user_message(fake_model.chats("perception")[0])
    assert perceived.split("\n\n### Anweisung")[0].endswith("[1] USER: Hey\nAchso, ich wollte sagen...\n"
                              "...dass ich morgen nicht kann")
    [user, _] = await chat.session()
    assert user["inhalt"] == "\n".join(texts) and user["nachrichten_ids"] == sent
    assert "...dass ich morgen nicht kann" in last_user_message(fake_model.chats("responder")[0])


async def test_6_6_the_character_writes_again_on_its_own(fake_model, make_settings,
                                                        aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    fake_model.script("perception", {"emotion": "trauer", "arousal": 0.8})
    fake_model.script("responder", "Oh nein, das tut mir wirklich leid.",
                      "Willst du darüber reden?")
    fake_model.script("thinker", {"follow_up": True, "intent": "nachfragen"})

    sent = await chat.send("Ich hab heute den Job verloren")
    empathy = await chat.response(sent)
    again = await chat.response(sent, origin="continue")
    await chat.settle()

    assert empathy["text"] == "Oh nein, das tut mir wirklich leid."
    assert again["text"] == "Willst du darüber reden?"
    assert again["turn_id"] == empathy["turn_id"]
    # Run 2 sees its own empathy answer and the user's turn; no router, no new empathy.
    second = last_user_message(fake_model.chats("responder")[1])
    assert "[1] USER (trauer): Ich hab heute den Job verloren" in second
    assert "[1] NOVA (mitgefuehl): Oh nein, das tut mir wirklich leid." in second
    assert "Schreib ihm von dir aus noch einmal: nachfragen" in second
    assert len(fake_model.chats("router")) == 1
    assert empathy["emotion"] == "mitgefuehl"
    assert again["arousal"] == empathy["arousal"]  # source character: decay only (≈ 0 s)
    assert len([m for m in chat.of_type("character_response")
                if m["turn_id"] == empathy["turn_id"]]) == 2


async def test_6_6_the_character_writes_again_at_most_three_times(
        fake_model, make_settings, aiohttp_client, caplog):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    fake_model.always("thinker", {"follow_up": True, "intent": "nachfragen"})
    count = iter(range(100))
    fake_model.always("responder", lambda request: f"Gedanke Nummer {next(count)}.")
    caplog.set_level(logging.WARNING, logger="app.runtime.runtime")

    sent = await chat.send("Mir geht es nicht gut")
    await chat.response(sent, origin="continue", count=3)
    await chat.settle()

    answers = [m for m in chat.of_type("character_response") if sent in m["message_ids"]]
    assert [m["origin"] for m in answers] == ["reply", "continue", "continue", "continue"]
    limit = chat.app[SETTINGS].max_self_triggers
    assert limit == 3
    dropped = [r for r in caplog.records if r.getMessage() == "self-trigger dropped at the limit"]
    assert len(dropped) == 1 and dropped[0].fields["limit"] == limit


async def test_6_7_no_active_character(fake_model, make_settings, aiohttp_client, data_dir):
    folder = data_dir / "characters"
    folder.mkdir()
    luna = folder / "luna.toml"
    luna.write_text('id = "luna"\nname = "Luna"\nlanguage = "de"\n'
                    'persona = "Du bist Luna."\n', encoding="utf-8")
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    assert [c["id"] for c in await chat.get("/api/characters")] == ["nova", "luna"]

    def perceive_and_deactivate(request):  # Luna is taken away while path 1 runs
        luna.unlink()
        return {"emotion": "freude", "arousal": 0.6, "core": "Der Mensch grüßt Luna."}
    fake_model.script("perception", perceive_and_deactivate)
    fake_model.script("salience", {"importance": 0.8, "segments": ["Der Mensch grüßt Luna."]})

    sent = await chat.send("Hey Luna!", character_id="luna")
    failed = await chat.failure(sent)
    await chat.settle()

    assert failed["reason"] == "no_active_character" and failed["message_ids"] == [sent]
    assert "responder" not in purposes(fake_model)
    # Session and short-term memory keep what the user said.
    turns, _ = await SessionMemory(app[REDIS], app[SETTINGS]).retrieve("local", "luna")
    assert [(t.role, t.content, t.emotion) for t in turns] == [("user", "Hey Luna!", "freude")]
    memories = await ShortTermMemory(app[REDIS], app[SETTINGS]).recent("local", "luna", 5)
    assert [m.text for m in memories] == ["Der Mensch grüßt Luna."]
    rows = await MessageLog(app[DB]).for_user("local", character_id="luna")
    assert [(r.role, r.text) for r in rows] == [("user", "Hey Luna!")]
    response = await chat.client.post("/api/characters/luna/messages", json={"text": "Hallo?"},
                                      headers={"Authorization": "Bearer test-token-0123456789"})
    assert response.status == 404
