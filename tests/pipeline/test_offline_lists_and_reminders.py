"""Issue 11, item 16: the offline model removes an item said with "wieder", keeps reminder
texts in their base form, and answers without quoting the user back — through the real
app with the default offline model."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from app.api.app_keys import RUNTIME
from app.pipeline.agents.reminders import when_text
from app.pipeline.offline_rules.lists import parse_list_task
from app.pipeline.offline_rules.reminders import reminder_text
from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.pipeline_support import open_chat


@pytest.mark.parametrize("task, expected", [
    ("Nimm Milch wieder von der Einkaufsliste", ["Milch"]),
    ("Streich bitte die Eier und den Käse von der Einkaufsliste", ["Eier", "Käse"]),
])
def test_removal_without_filler_words(task, expected):
    assert parse_list_task(task)["remove"] == expected


@pytest.mark.parametrize("task, expected", [
    ("Erinnere mich morgen daran, die Wäsche aufzuhängen", "Wäsche aufhängen"),
    ("Erinnere mich um 9 daran, den Arzt anzurufen", "Arzt anrufen"),
    ("Erinnere mich übermorgen daran, Oma zu besuchen", "Oma besuchen"),
    ("Erinnere mich morgen an den Zahnarzt", "Zahnarzt"),
])
def test_reminder_text_is_in_its_base_form(task, expected):
    assert reminder_text(task) == expected


async def test_milch_comes_off_the_list_again_with_the_offline_model(aiohttp_client,
                                                                     make_settings):
    chat = await open_chat(aiohttp_client, create_app(make_settings(llm_provider="offline"),
                                                      local_token=TOKEN))
    await chat.response(await chat.send("Setz Milch und Brot auf die Einkaufsliste"))
    lists = await chat.get("/api/characters/nova/lists")
    assert sorted(lists[0]["items"]) == ["Brot", "Milch"]
    answer = await chat.response(await chat.send("Nimm Milch wieder von der Einkaufsliste"))
    lists = await chat.get("/api/characters/nova/lists")
    assert lists[0]["items"] == ["Brot"], (lists, answer["text"])
    chatter = await chat.response(await chat.send("Ich war heute lange im Park spazieren."))
    assert "Du schreibst" not in chatter["text"] and "im Park spazieren" not in chatter["text"]


async def test_older_turns_after_a_reload_have_no_raw_speaker_labels(aiohttp_client,
                                                                     make_settings):
    """Item 14: what a reloaded tab shows of older turns (the session summary) reads as a
    conversation, not as the renderer's `USER:`/`NOVA:` lines."""
    chat = await open_chat(aiohttp_client, create_app(make_settings(
        llm_provider="offline", session_summarize_at=3, session_summarize_batch=2,
        session_max_turns=2), local_token=TOKEN))
    for text in ("Hallo", "Ich war heute mit Anna im Park.", "Wie geht es dir?",
                 "Morgen fahre ich nach Berlin."):
        await chat.response(await chat.send(text))
    await chat.client.app[RUNTIME].idle()
    session = await chat.get("/api/characters/nova/session")
    summary = session["summary"]
    assert summary and "Anna" in summary
    assert "USER" not in summary and "NOVA" not in summary, summary
    assert "Du: " in summary and "Nova: " in summary


async def test_auch_noch_drauf_adds_to_the_list_changed_last(aiohttp_client, make_settings):
    chat = await open_chat(aiohttp_client, create_app(make_settings(llm_provider="offline"),
                                                      local_token=TOKEN))
    for text in ("Setz Milch auf die Einkaufsliste", "Setz Shampoo auf die Drogerieliste",
                 "Ja, leg sie neu an",
                 "Setz Käse auf die Einkaufsliste", "Brot und Eier auch noch drauf"):
        await chat.response(await chat.send(text))
    lists = {item["name"]: item["items"] for item in await chat.get(
        "/api/characters/nova/lists")}
    assert lists["Einkaufsliste"] == ["Milch", "Käse", "Brot", "Eier"], lists
    assert lists["Drogerieliste"] == ["Shampoo"]


async def test_list_replies_come_in_the_users_language(aiohttp_client, make_settings):
    """Item 15: English to the German-speaking Nova: the list agent's sentence is English."""
    chat = await open_chat(aiohttp_client, create_app(make_settings(llm_provider="offline"),
                                                      local_token=TOKEN))
    answer = await chat.response(await chat.send("Please put milk on the shopping list"))
    assert "is now on the list" in answer["text"], answer["text"]
    assert "steht jetzt" not in answer["text"]


@pytest.mark.parametrize("text, form", [
    ("Remind me tomorrow at 9 about the dentist", "on {d:%B} {d.day}, {d.year} at {d:%H:%M}"),
    ("Erinnere mich morgen um 9 an den Zahnarzt", "am {d:%d.%m.%Y} um {d:%H:%M} Uhr"),
])
async def test_a_reminders_date_in_the_reply_is_written_as_its_language_writes_it(
        aiohttp_client, make_settings, text, form):
    """English: "on December 2, 2026 at 09:00", not the ISO "2026-12-02"; German:
    "am 02.12.2026 um 09:00 Uhr"."""
    chat = await open_chat(aiohttp_client, create_app(make_settings(llm_provider="offline"),
                                                      local_token=TOKEN))
    answer = await chat.response(await chat.send(text))
    [reminder] = await chat.get("/api/characters/nova/reminders")
    due = dt.datetime.fromisoformat(reminder["due_at_iso"])
    assert form.format(d=due) in answer["text"], answer["text"]
    assert not re.search(r"\d{4}-\d{2}-\d{2}", answer["text"]), answer["text"]


@pytest.mark.parametrize("language, expected", [
    ("en", "on March 1, 2026 at 07:05"), ("en-GB", "on March 1, 2026 at 07:05"),
    ("de", "am 01.03.2026 um 07:05 Uhr"), ("fr", "on March 1, 2026 at 07:05"),
])
def test_when_text_writes_the_languages_date(language, expected):
    due = dt.datetime(2026, 3, 1, 7, 5, tzinfo=dt.timezone.utc).timestamp()
    assert when_text(due, dt.timezone.utc, language) == expected
