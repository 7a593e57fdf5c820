"""The offline model plays along: with no model server at all, the whole character works —
a shopping list, a reminder that comes back as an impulse, a question and its resume, and a
plain reply for everything else. Plus the offline rules one by one."""

from __future__ import annotations

import datetime as dt

import pytest

from app.pipeline.offline_rules import lists as list_rules
from app.pipeline.offline_rules import reminders as reminder_rules
from app.pipeline.offline_rules import routing
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat


@pytest.fixture
def offline_app(make_settings):
    return create_app(make_settings(llm_provider="offline"), local_token=TOKEN)


async def test_offline_the_shopping_list_works(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)

    sent = await chat.send("Setz Milch auf die Einkaufsliste")
    answer = await chat.response(sent)
    more = await chat.send("Setz noch Brot und Butter auf die Einkaufsliste")
    await chat.response(more)
    gone = await chat.send("Streich Butter von der Einkaufsliste")
    await chat.response(gone)
    await chat.settle()

    assert "Milch" in answer["text"] and "Einkaufsliste" in answer["text"]
    lists = await chat.get("/api/characters/nova/lists")
    assert [(item["name"], item["items"]) for item in lists] == [
        ("Einkaufsliste", ["Milch", "Brot"])]
    user_turns = [t for t in await chat.session() if t["rolle"] == "user"]
    assert all(t["aktion_erledigt"] and t["aktion_erfolgreich"] for t in user_turns)


async def test_offline_a_reminder_works_and_comes_back_as_an_impulse(offline_app,
                                                                     aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)

    sent = await chat.send("Erinnere mich in 1 Sekunde an den Zahnarzt")
    answer = await chat.response(sent)
    impulse = await chat.response(origin="own_impulse")
    await chat.settle()

    assert "Zahnarzt" in answer["text"]
    [reminder] = await chat.get("/api/characters/nova/reminders")
    assert reminder["text"] == "Zahnarzt" and reminder["status"] == "fired"
    assert "Zahnarzt" in impulse["text"]
    assert [t["herkunft"] for t in await chat.session()][-1] == "eigener_impuls"


async def test_offline_which_list_is_asked_and_the_answer_resumes(offline_app,
                                                                  aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    await chat.response(await chat.send("Setz Brot auf die Liste Wocheneinkauf"))
    # A list that does not exist yet, while another does: asked, then created on request.
    asked_new = await chat.response(await chat.send("Setz Shampoo auf die Liste Drogerie"))
    assert "„Drogerie“ gibt es noch nicht" in asked_new["text"]
    await chat.response(await chat.send("Ja, leg sie neu an"))

    asked = await chat.response(await chat.send("Setz Milch auf die Liste"))
    done = await chat.response(await chat.send("Wocheneinkauf"))
    await chat.settle()

    assert "Wocheneinkauf" in asked["text"] and "Drogerie" in asked["text"]
    assert asked["text"].endswith("?")
    assert "Milch" in done["text"]
    lists = {item["name"]: item["items"] for item in await chat.get("/api/characters/nova/lists")}
    assert lists == {"Wocheneinkauf": ["Brot", "Milch"], "Drogerie": ["Shampoo"]}


async def test_offline_everything_else_gets_a_plain_reply(offline_app, aiohttp_client):
    chat = await open_chat(aiohttp_client, offline_app)
    answer = await chat.response(await chat.send("Ich war heute im Park spazieren."))
    await chat.settle()
    assert answer["text"] and answer["origin"] == "reply"
    assert await chat.get("/api/characters/nova/lists") == []
    assert await chat.get("/api/characters/nova/reminders") == []


# --- the rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Setz Milch auf die Einkaufsliste", {"list_name": "Einkaufsliste", "add": ["Milch"]}),
    ("Setz Milch und Brot auf die Liste Wocheneinkauf",
     {"list_name": "Wocheneinkauf", "add": ["Milch", "Brot"]}),
    ("Streich Milch von der Einkaufsliste", {"list_name": "Einkaufsliste", "remove": ["Milch"]}),
    ("Zeig mir die Einkaufsliste", {"list_name": "Einkaufsliste", "show": True}),
    ("Leere die Einkaufsliste", {"list_name": "Einkaufsliste", "clear": True}),
    ("Put milk and eggs on my shopping list",
     {"list_name": "shopping list", "add": ["milk", "eggs"]}),
])
def test_list_tasks_are_read(text, expected):
    assert list_rules.parse_list_task(text) == expected


NOW = dt.datetime(2026, 11, 30, 10, 15, tzinfo=dt.timezone(dt.timedelta(hours=1)))  # Monday


@pytest.mark.parametrize("text, expected", [
    ("erinnere mich morgen an den Zahnarzt", dt.datetime(2026, 12, 1, 9, 0)),
    ("Erinnere mich in 5 Minuten an den Tee", dt.datetime(2026, 11, 30, 10, 20)),
    ("erinnere mich um 9 an die Tabletten", dt.datetime(2026, 12, 1, 9, 0)),
    ("erinnere mich um 14:30 an das Meeting", dt.datetime(2026, 11, 30, 14, 30)),
    ("Erinnere mich am Freitag um 14:30 an das Meeting", dt.datetime(2026, 12, 4, 14, 30)),
    ("erinnere mich übermorgen abends an Oma", dt.datetime(2026, 12, 2, 19, 0)),
    ("remind me tomorrow at 3 pm to call mum", dt.datetime(2026, 12, 1, 15, 0)),
    ("remind me in 2 hours about the oven", dt.datetime(2026, 11, 30, 12, 15)),
    ("erinnere mich an den Zahnarzt", None),
])
def test_reminder_times_are_read_relative_to_now(text, expected):
    when = reminder_rules.parse_when(text, NOW)
    if expected is None:
        assert when is None
    else:
        assert when == expected.replace(tzinfo=NOW.tzinfo)


@pytest.mark.parametrize("text, what", [
    ("erinnere mich morgen an den Zahnarzt", "Zahnarzt"),
    ("Erinnere mich am Freitag um 14:30 an das Meeting", "Meeting"),
    ("remind me tomorrow at 3 pm to call mum", "Call mum"),
])
def test_reminder_texts_are_read(text, what):
    assert reminder_rules.reminder_text(text) == what


@pytest.mark.parametrize("text, agents", [
    ("Setz Milch auf die Liste", ["lists"]),
    ("Erinnere mich morgen an den Müll", ["reminders"]),
    ("Kannst du mich morgen an den Müll erinnern?", ["reminders"]),
    ("Ich erinnere mich gern an früher", []),
    ("Ich habe eine lange Liste an Sorgen", []),
    ("Wie geht es dir?", []),
])
def test_the_router_rules(text, agents):
    assert routing.agents_for(text) == agents


def test_the_planner_splits_tasks_by_agent_and_keeps_one_agents_clauses_together():
    assert routing.split_tasks("Setz Milch auf die Liste und erinnere mich morgen an den "
                               "Zahnarzt") == [
        ("lists", "Setz Milch auf die Liste"),
        ("reminders", "erinnere mich morgen an den Zahnarzt")]
    assert routing.split_tasks("Setz Milch und Brot auf die Liste") == [
        ("lists", "Setz Milch und Brot auf die Liste")]


def test_a_short_answer_or_a_named_option_answers_an_open_question():
    question = "Auf welche Liste: „Wocheneinkauf“ oder „Drogerie“?"
    assert routing.answers_question("Wocheneinkauf", question)
    assert routing.answers_question("die für die Drogerie bitte, danke dir vielmals", question)
    assert not routing.answers_question("Erinnere mich morgen an den Zahnarzt", question)
