"""Issue 21, item 2 by chat: "Streich die Eier" takes them off the list the conversation is
about (no "Liste" said), "Lösch die Erinnerung an den Zahnarzt" deletes it and "Verschieb den
Zahnarzt auf 10 Uhr" moves it — never a new reminder —, in German and English, answered in
sentences that agree with their items ("Eier sind gestrichen"). Through the real app: with
the offline model, and with a real model's answers (the fake model server)."""

from __future__ import annotations

import datetime as dt

import pytest

from app.api.app_keys import REDIS
from app.core.grammar import plural
from app.memory.lists import ListStore
from app.memory.reminders import ReminderStore
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import fake_app, last_user_message, open_chat

REMINDERS = "/api/characters/nova/reminders"
LISTS = "/api/characters/nova/lists"


@pytest.fixture
def offline_app(make_settings):
    return create_app(make_settings(llm_provider="offline"), local_token=TOKEN)


async def lists_of(chat) -> dict[str, list[str]]:
    return {item["name"]: item["items"] for item in await chat.get(LISTS)}


async def say(chat, text: str) -> str:
    return (await chat.response(await chat.send(text)))["text"]


async def test_streich_die_eier_takes_them_off_the_list_that_has_them(offline_app,
                                                                     aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    await say(chat, "Setz Milch, Eier und Brot auf die Einkaufsliste")
    await ListStore(chat.app[REDIS], "local", "nova").apply("Baumarkt",
                                                            add=["Schrauben", "Dübel"])
    answer = await say(chat, "Streich die Eier")
    assert answer == "Eier sind von der Liste „Einkaufsliste“ gestrichen."
    answer = await say(chat, "Nimm die Milch runter")
    assert answer == "Milch ist von der Liste „Einkaufsliste“ gestrichen."
    answer = await say(chat, "Streich bitte die Dübel.")
    assert answer == "Dübel sind von der Liste „Baumarkt“ gestrichen."
    assert await lists_of(chat) == {"Baumarkt": ["Schrauben"], "Einkaufsliste": ["Brot"]}
    answer = await say(chat, "Das Brot kannst du streichen.")
    assert answer == "Brot ist von der Liste „Einkaufsliste“ gestrichen."
    await ListStore(chat.app[REDIS], "local", "nova").apply("Einkaufsliste", add=["Brot"])
    await say(chat, "Streich die Wand im Flur")  # on no list: a conversation, nothing crossed
    assert await lists_of(chat) == {"Baumarkt": ["Schrauben"], "Einkaufsliste": ["Brot"]}


async def test_cross_off_the_eggs_in_english(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    await say(chat, "Put milk and eggs on the shopping list")
    answer = await say(chat, "Cross off the eggs")
    assert answer == "Eggs are crossed off the list “shopping list”."
    answer = await say(chat, "Please take the milk off")
    assert answer == "Milk is crossed off the list “shopping list”."
    assert await lists_of(chat) == {"shopping list": []}


async def test_a_reminder_is_moved_and_deleted_by_chat_never_made_anew(offline_app,
                                                                      aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    await say(chat, "Erinnere mich morgen um 9 an den Zahnarzt")
    [made] = await chat.get(REMINDERS)
    answer = await say(chat, "Verschieb den Zahnarzt auf 10 Uhr")
    [moved] = await chat.get(REMINDERS)
    assert moved["id"] == made["id"] and moved["due_at"] - made["due_at"] == 3600
    assert dt.datetime.fromisoformat(moved["due_at_iso"]).hour == 10
    assert answer.startswith("Ich habe „Zahnarzt“ verschoben") and "10:00" in answer
    answer = await say(chat, "Lösch die Erinnerung an den Zahnarzt")
    assert answer == "Die Erinnerung an „Zahnarzt“ ist gelöscht."
    assert await chat.get(REMINDERS) == []
    answer = await say(chat, "Lösch die Erinnerung an den Friseur")
    assert answer == "Eine Erinnerung an „Friseur“ habe ich nicht gefunden."
    assert await chat.get(REMINDERS) == []
    user_turns = [t for t in await chat.session() if t["rolle"] == "user"]
    # A refusal ("not found") marks the request neither done nor failed (design §3).
    assert [t["aktion_erfolgreich"] for t in user_turns] == [True, True, True, None]


async def test_move_and_delete_the_dentist_in_english(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    await say(chat, "Remind me tomorrow at 9 am about the dentist")
    [made] = await chat.get(REMINDERS)
    assert made["text"] == "Dentist"
    answer = await say(chat, "Move the dentist to 10am")
    [moved] = await chat.get(REMINDERS)
    assert moved["id"] == made["id"] and moved["due_at"] - made["due_at"] == 3600
    assert answer.startswith("I moved “Dentist”")
    answer = await say(chat, "Delete the dentist reminder")
    assert answer == "The reminder of “Dentist” is deleted."
    assert await chat.get(REMINDERS) == []


@pytest.mark.parametrize("make, move, delete, hour", [
    ("Erinnere mich morgen um 9 an den Zahnarzt",
     "Könntest du den Zahnarzt auf 11 Uhr verschieben?",
     "Kannst du bitte die Erinnerung an den Zahnarzt löschen?", 11),
    ("Remind me tomorrow at 9 am about the dentist", "Could you move the dentist to 11am?",
     "Can you please delete the dentist reminder?", 11),
])
async def test_a_reminder_is_moved_and_deleted_when_asked_as_a_request(
        offline_app, aiohttp_client, make, move, delete, hour):
    chat = await open_chat(aiohttp_client, offline_app)
    await say(chat, make)
    [made] = await chat.get(REMINDERS)
    await say(chat, move)
    [moved] = await chat.get(REMINDERS)
    assert moved["id"] == made["id"] and moved["due_at"] - made["due_at"] == 2 * 3600
    assert dt.datetime.fromisoformat(moved["due_at_iso"]).hour == hour
    await say(chat, delete)
    assert await chat.get(REMINDERS) == []


async def test_a_fired_reminder_moved_by_chat_comes_again(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    await say(chat, "Erinnere mich in 1 Sekunde an den Tee")
    await chat.response(origin="own_impulse")
    await chat.settle()
    [fired] = await chat.get(REMINDERS)
    assert fired["status"] == "fired"
    await say(chat, "Verschieb den Tee auf morgen")
    [again] = await chat.get(REMINDERS)
    assert again["id"] == fired["id"] and again["status"] == "pending"
    assert again["due_at"] > fired["due_at"] + 23 * 3600


# --- a real model's answers (the fake model server) -------------------------------------------

async def test_the_model_deletes_and_moves_with_the_reminders_it_is_shown(
        fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    store = ReminderStore(chat.app[REDIS])
    due = dt.datetime.now().astimezone().replace(microsecond=0) + dt.timedelta(days=1)
    dentist = await store.add("local", "nova", "Zahnarzt", due.timestamp())
    await store.add("local", "nova", "Müll rausbringen", due.timestamp())
    new_time = due + dt.timedelta(hours=1)
    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"move": True, "text": "Zahnarzt",
                                          "due_at": new_time.isoformat()})
    await chat.response(await chat.send("Verschieb den Zahnarzt eine Stunde nach hinten"))
    shown = last_user_message(fake_model.chats("agent_reminders")[0])
    assert "### Offene Erinnerungen" in shown and "- Zahnarzt — " in shown
    routed = last_user_message(fake_model.chats("router")[0])
    assert "### Offene Erinnerungen" in routed and "Müll rausbringen" in routed
    by_id = {r["id"]: r for r in await chat.get(REMINDERS)}
    assert len(by_id) == 2 and by_id[dentist.id]["due_at"] == new_time.timestamp()

    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"delete": True, "text": "Zahnarzt"})
    await chat.response(await chat.send("Den Zahnarzt brauche ich nicht mehr"))
    assert [r["text"] for r in await chat.get(REMINDERS)] == ["Müll rausbringen"]
    told = last_user_message(fake_model.chats("responder")[-1])
    assert "Die Erinnerung an „Zahnarzt“ ist gelöscht." in told


async def test_several_fitting_reminders_are_asked_about_and_the_answer_picks_one(
        fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    store = ReminderStore(chat.app[REDIS])
    now = dt.datetime.now().astimezone()
    monday = await store.add("local", "nova", "Zahnarzt Kontrolle",
                             (now + dt.timedelta(days=1)).timestamp())
    await store.add("local", "nova", "Zahnarzt Reinigung", (now + dt.timedelta(days=2)).timestamp())
    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"delete": True, "text": "Zahnarzt"})
    await chat.response(await chat.send("Lösch die Erinnerung an den Zahnarzt"))
    asked = last_user_message(fake_model.chats("responder")[-1])
    assert "Welche Erinnerung meinst du" in asked and "Reinigung" in asked
    assert len(await chat.get(REMINDERS)) == 2
    fake_model.script("router", {"answers_pending": True})
    fake_model.script("agent_reminders", {"text": "Reinigung"})
    await chat.response(await chat.send("Die Reinigung"))
    assert [r["id"] for r in await chat.get(REMINDERS)] == [monday.id]


async def test_the_model_crosses_off_without_a_list_name(fake_model, make_settings,
                                                         aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    store = ListStore(chat.app[REDIS], "local", "nova")
    await store.apply("Einkaufsliste", add=["Milch", "Eier"])
    await store.apply("Baumarkt", add=["Schrauben"])
    fake_model.script("router", {"needs_action": True, "agents": ["lists"]})
    fake_model.script("agent_lists", {"remove": ["Eier"]})
    await chat.response(await chat.send("Streich die Eier"))
    routed = last_user_message(fake_model.chats("router")[0])
    assert "### Vorhandene Listen" in routed and "Einkaufsliste: Milch, Eier" in routed
    assert await lists_of(chat) == {"Einkaufsliste": ["Milch"], "Baumarkt": ["Schrauben"]}


@pytest.mark.parametrize("item, language, many", [
    ("Milch", "de", False), ("Eier", "de", True), ("2 kg Mehl", "de", True),
    ("1 Packung Nudeln", "de", False), ("Nudeln", "de", True), ("Kuchen", "de", False),
    ("Zwiebeln", "de", True), ("Rechnungen", "de", True), ("Käse", "de", False),
    ("Hafermilch", "de", False), ("zwei Äpfel", "de", True),
    ("milk", "en", False), ("eggs", "en", True), ("hummus", "en", False),
    ("a glass", "en", False), ("3 lemons", "en", True), ("some tomatoes", "en", True),
])
def test_an_item_is_plural_or_singular(item, language, many):
    assert plural(item, language) is many
