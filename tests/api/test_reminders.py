"""Issue 11, item 5: reminders refuse impossible due times, keep a per-pair cap and count
against the rate limit; nothing is written on a refusal, and the list keeps answering."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.pipeline_support import fake_app, last_user_message, open_chat

URL = "/api/characters/nova/reminders"


@pytest.mark.parametrize("due_at", [
    1e20, -1.0, "9999-12-31T23:59:59+00:00", "0001-01-01T00:00:00+00:00",
    "2000-01-01T00:00:00Z", "lambda", time.time() + 20 * 366 * 86400],
    # Named, so that every collector (a test worker) sees the same ids for the clock's value.
    ids=["1e20", "negative", "year-9999", "year-1", "past", "word", "twenty-years-ahead"])
async def test_impossible_due_times_are_400_and_write_nothing(client, due_at):
    response = await client.post(URL, json={"text": "Zahnarzt", "due_at": due_at}, headers=AUTH)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "invalid_due_at"
    listing = await client.get(URL, headers=AUTH)
    assert listing.status == 200 and await listing.json() == []


async def test_a_moment_ago_is_not_the_past(client):
    response = await client.post(URL, json={"text": "jetzt", "due_at": time.time() - 30},
                                 headers=AUTH)
    assert response.status == 201


async def test_pending_reminders_per_pair_are_capped(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(
        make_settings(llm_provider="offline", max_reminders_per_pair=3), local_token=TOKEN))
    due = time.time() + 3600
    for i in range(3):
        ok = await client.post(URL, json={"text": f"r{i}", "due_at": due}, headers=AUTH)
        assert ok.status == 201
    refused = await client.post(URL, json={"text": "r3", "due_at": due}, headers=AUTH)
    assert refused.status == 429
    assert (await refused.json())["error"]["code"] == "too_many_reminders"
    assert len(await (await client.get(URL, headers=AUTH)).json()) == 3


async def test_reminder_creation_counts_against_the_rate_limit(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(
        make_settings(llm_provider="offline", rate_limit_per_second=1.0), local_token=TOKEN))
    due = time.time() + 3600
    statuses = [(await client.post(URL, json={"text": f"r{i}", "due_at": due},
                                   headers=AUTH)).status for i in range(4)]
    assert statuses[:2] == [201, 201] and 429 in statuses[2:]
    assert len(await (await client.get(URL, headers=AUTH)).json()) == statuses.count(201)


async def test_the_agent_asks_again_for_year_9999_and_stores_nothing(
        fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"text": "Zahnarzt",
                                          "due_at": "9999-12-31T23:59:59+00:00"})
    await chat.response(await chat.send("Erinnere mich im Jahr 9999 an den Zahnarzt"))
    told = last_user_message(fake_model.chats("responder")[0])
    assert "Wann soll ich dich an „Zahnarzt“ erinnern?" in told
    assert await chat.get(URL) == []


async def test_the_agent_keeps_the_cap(fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings,
                                                    max_reminders_per_pair=1))
    due = (dt.datetime.now().astimezone() + dt.timedelta(days=1)).isoformat()
    for _ in range(2):
        fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
        fake_model.script("agent_reminders", {"text": "Zahnarzt", "due_at": due})
        await chat.response(await chat.send("Erinnere mich morgen an den Zahnarzt"))
    told = last_user_message(fake_model.chats("responder")[-1])
    assert "offene Erinnerungen" in told
    assert len(await chat.get(URL)) == 1
