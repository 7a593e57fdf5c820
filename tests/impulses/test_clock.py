"""Own impulses: the reminder clock, the impulse event it produces (payload fields and their
absence rules), delivery as `own_impulse`, storage as `eigener_impuls`, restarts, and the
reminders API at its boundary."""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import msgspec
import pytest

from app.api.app_keys import REDIS, REMINDER_CLOCK
from app.memory import keys
from app.memory.reminders import DueTimeError, ReminderStore, parse_due
from app.runtime.wire import decode_event
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.pipeline_support import fake_app, hold_pair, last_user_message, open_chat

URL = "/api/characters/nova/reminders"


async def post_reminder(chat, text: str, due_at: object) -> dict:
    response = await chat.client.post(URL, json={"text": text, "due_at": due_at}, headers=AUTH)
    assert response.status == 201, await response.text()
    return await response.json()


async def queued_events(app) -> list[str]:
    """The pair's queued events as they are stored (the wire bytes)."""
    return await app[REDIS].lrange(keys.event_queue("local", "nova"), 0, -1)


async def test_a_due_reminder_becomes_an_impulse_event_with_the_seeds_payload(
        fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    await hold_pair(app)  # a turn "runs": the impulse waits in the queue, where we read it
    reminder = await post_reminder(chat, "Zahnarzt", time.time())

    [stored] = await chat.get(URL)
    await chat.wait_for(lambda m: m["type"] == "turn_state" and m["state"] == "queued")
    [raw] = await queued_events(app)

    event = decode_event(raw)
    assert (event.source, event.typ, event.trigger_count) == ("character", "message", 0)
    assert event.payload.thought_arousal is None and event.payload.trigger_turn_id is None
    payload = msgspec.json.decode(raw)["payload"]  # the keys as stored
    assert payload["eigener_gedanke"] == "Ich wollte dich an „Zahnarzt“ erinnern – es ist so weit."
    assert payload["reiz_herkunft"] == "eigener_impuls"
    # Always present, None when unknown; the stimulus slot of the user is absent, not empty.
    assert "gedanke_arousal" in payload and payload["gedanke_arousal"] is None
    assert "ausloeser_turn_id" in payload and payload["ausloeser_turn_id"] is None
    assert "user_prompt" not in payload
    assert payload["nachrichten_ids"] == [] and payload["turn_id"]
    fired = (await chat.get(URL))[0]
    assert fired["id"] == reminder["id"] == stored["id"]
    assert fired["status"] == "fired" and fired["impulse_turn_id"] == payload["turn_id"]


async def test_a_reminder_set_in_chat_names_its_turn_and_is_answered_as_own_impulse(
        fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    due = (dt.datetime.now().astimezone() + dt.timedelta(seconds=1)).isoformat()
    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"text": "Tee", "due_at": due})
    fake_model.script("responder", "Mach ich!", "Dein Tee ist fertig!")

    sent = await chat.send("Erinnere mich gleich an den Tee")
    asked = await chat.response(sent)
    impulse = await chat.response(origin="own_impulse")
    await chat.settle()

    assert impulse["text"] == "Dein Tee ist fertig!" and impulse["message_ids"] == []
    assert impulse["turn_id"] != asked["turn_id"]
    [reminder] = await chat.get(URL)
    assert reminder["trigger_turn_id"] == asked["turn_id"]
    assert reminder["impulse_turn_id"] == impulse["turn_id"]
    turns = await chat.session()
    assert [(t["rolle"], t["herkunft"]) for t in turns] == [
        ("user", ""), ("assistant", "antwort"), ("assistant", "eigener_impuls")]
    # The responder saw the reminder as its own thought, never as the user's words.
    prompt = last_user_message(fake_model.chats("responder")[1])
    assert "### Dein eigener Gedanke (niemand hat etwas gesagt)\nIch wollte dich an „Tee“" \
        in prompt
    assert "Sprich den Menschen von dir aus" in prompt
    assert len(fake_model.chats("router")) == 1  # an own thought asks no agent


async def test_reminders_survive_a_restart(fake_model, make_settings, aiohttp_client):
    settings = make_settings(**fake_model.overrides())
    first = create_app(settings, local_token=TOKEN)
    chat = await open_chat(aiohttp_client, first)
    await post_reminder(chat, "Blumen gießen", time.time() + 3600)
    due_soon = await post_reminder(chat, "Post holen", time.time() + 0.5)
    await chat.close()
    await chat.client.close()  # the app stops before the reminder is due

    second = create_app(settings, local_token=TOKEN)
    chat = await open_chat(aiohttp_client, second)
    impulse = await chat.response(origin="own_impulse")

    by_text = {r["text"]: r for r in await chat.get(URL)}
    assert by_text["Post holen"]["status"] == "fired"
    assert by_text["Post holen"]["impulse_turn_id"] == impulse["turn_id"]
    assert by_text["Blumen gießen"]["status"] == "pending"
    assert due_soon["id"] == by_text["Post holen"]["id"]


async def test_a_claim_that_was_never_delivered_is_put_back(redis_client):
    store = ReminderStore(redis_client)
    reminder = await store.add("local", "nova", "Yoga", time.time() - 5)
    [member] = await store.due_members(time.time())
    claimed = await store.claim(member)
    assert claimed is not None and claimed.status == "claimed"
    assert await store.claim(member) is None  # a second clock gets nothing
    assert await store.due_members(time.time()) == []

    assert await store.put_back_stale(older_than=time.time() - 60) == []  # still fresh
    assert await store.put_back_stale(older_than=time.time() + 1) == [member]

    [again] = await store.list("local", "nova")
    assert again.status == "pending" and again.id == reminder.id
    assert await store.due_members(time.time()) == [member]


async def test_the_clock_wakes_when_a_reminder_is_added(fake_model, make_settings,
                                                       aiohttp_client):
    # A long poll: only the wake makes a reminder due in a moment fire in time for the test.
    app = fake_app(fake_model, make_settings, reminder_poll_seconds=600.0)
    chat = await open_chat(aiohttp_client, app)
    await post_reminder(chat, "Pause machen", time.time() + 0.3)
    impulse = await chat.response(origin="own_impulse")
    assert impulse["text"]
    assert app[REMINDER_CLOCK].fired == 1


@pytest.mark.parametrize("body, status, code", [
    ({"text": "", "due_at": 1e10}, 400, "empty_text"),
    ({"text": "   ", "due_at": 1e10}, 400, "empty_text"),
    ({"text": "Zahnarzt"}, 400, "invalid_request"),
    ({"text": "Zahnarzt", "due_at": "morgen"}, 400, "invalid_due_at"),
    ({"text": "Zahnarzt", "due_at": ""}, 400, "invalid_due_at"),
    ({"text": "Zahnarzt", "due_at": "2030-13-01T09:00:00"}, 400, "invalid_due_at"),
    ({"text": "Zahnarzt", "due_at": True}, 400, "invalid_request"),
    ({"text": "Zahnarzt", "due_at": -5}, 400, "invalid_due_at"),
    ({"text": "Zahnarzt", "due_at": None}, 400, "invalid_request"),
    ({"text": 7, "due_at": 1e10}, 400, "invalid_request"),
    ({"text": "Zahnarzt", "due_at": 1e10, "user_id": "x"}, 400, "invalid_request"),
    ({"text": "x" * 20001, "due_at": 1e10}, 413, "text_too_long"),
])
async def test_bad_reminder_input_gets_the_error_shape_and_stores_nothing(
        fake_model, make_settings, aiohttp_client, body, status, code):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    response = await chat.client.post(URL, json=body, headers=AUTH)
    assert response.status == status
    error = await response.json()
    assert set(error) == {"error"} and error["error"]["code"] == code
    assert await chat.get(URL) == []
    assert await app[REDIS].zcard(keys.reminders_due()) == 0


async def test_reminder_routes_need_auth_and_a_known_character(fake_model, make_settings,
                                                              aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    assert (await chat.client.get(URL)).status == 401
    response = await chat.client.post("/api/characters/nobody/reminders",
                                      json={"text": "x", "due_at": 1e10}, headers=AUTH)
    assert response.status == 404 and (await response.json())["error"]["code"] == \
        "unknown_character"
    response = await chat.client.post(URL, json={"text": "x", "due_at": 1e10},
                                      headers={**AUTH, "Origin": "http://evil.example"})
    assert response.status == 403


async def test_iso_with_offset_and_epoch_seconds_are_both_accepted(fake_model, make_settings,
                                                                  aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    iso = await post_reminder(chat, "A", "2030-01-01T09:00:00+01:00")
    zulu = await post_reminder(chat, "B", "2030-01-01T08:00:00Z")
    epoch = await post_reminder(chat, "C", 1893484800)
    assert iso["due_at"] == zulu["due_at"] == epoch["due_at"] == 1893484800.0
    assert msgspec.json.decode(msgspec.json.encode(iso))["status"] == "pending"


async def test_idle_reflection_speaks_once_per_quiet_period(fake_model, make_settings,
                                                           aiohttp_client):
    from app.memory.state import load_state, save_state
    app = fake_app(fake_model, make_settings, idle_reflection_minutes=1)
    chat = await open_chat(aiohttp_client, app)
    await chat.response(await chat.send("Hallo"))
    await chat.settle()
    clock = app[REMINDER_CLOCK]
    assert await clock.reflect_when_idle(time.time()) == 0  # not quiet long enough yet

    state = await load_state(app[REDIS], "local", "nova")
    quiet_since = time.time() - 61
    await save_state(app[REDIS], "local", "nova",
                     msgspec.structs.replace(state, user_time=quiet_since))
    assert await clock.reflect_when_idle(time.time()) == 1
    impulse = await chat.response(origin="own_impulse")
    await chat.settle()
    assert await clock.reflect_when_idle(time.time()) == 0  # one per quiet period

    prompt = last_user_message(fake_model.chats("responder")[-1])
    assert "Mir geht unser letztes Gespräch noch durch den Kopf." in prompt
    assert impulse["message_ids"] == []
    assert [t["herkunft"] for t in await chat.session()][-1] == "eigener_impuls"


# --- the one due-time parser: the API and the reminders agent read a time alike ------------

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


@pytest.mark.parametrize("value, zone, expected", [
    ("2030-01-01T09:00:00+01:00", NEW_YORK, 1893484800.0),   # an offset wins over the zone
    ("2030-01-01T08:00:00Z", BERLIN, 1893484800.0),
    ("2030-01-01T09:00:00", BERLIN, 1893484800.0),           # local: the user's zone
    ("2030-01-01T03:00:00", NEW_YORK, 1893484800.0),
    ("2030-07-01T10:00:00", BERLIN, 1909123200.0),           # summer time in that zone
    (1893484800, BERLIN, 1893484800.0),
    (1893484800.5, None, 1893484800.5),
])
def test_parse_due_reads_offsets_local_times_and_epoch_seconds(value, zone, expected):
    assert parse_due(value, zone=zone) == expected


def test_parse_due_without_a_zone_reads_local_time_as_the_machines():
    naive = dt.datetime(2030, 1, 1, 9, 0)
    assert parse_due(naive.isoformat(), zone=None) == naive.astimezone().timestamp()


@pytest.mark.parametrize("value", ["", "   ", "morgen", "2030-02-30T09:00", True, 0, -5,
                                   float("nan"), float("inf")])
def test_parse_due_rejects_what_is_not_a_moment(value):
    with pytest.raises(DueTimeError):
        parse_due(value, zone=BERLIN)


async def test_api_and_agent_read_a_time_without_offset_in_the_users_zone(
        fake_model, make_settings, aiohttp_client):
    # Before: the API refused such a time and the agent read it in the machine's zone.
    app = fake_app(fake_model, make_settings, timezone="America/New_York")
    chat = await open_chat(aiohttp_client, app)
    by_api = await post_reminder(chat, "API", "2030-01-01T03:00:00")
    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"text": "Agent", "due_at": "2030-01-01T03:00:00"})

    await chat.response(await chat.send("Erinnere mich am 1.1.2030 um 3 Uhr"))
    await chat.settle()

    reminders = {r["text"]: r for r in await chat.get(URL)}
    assert by_api["due_at"] == reminders["Agent"]["due_at"] == 1893484800.0
    assert reminders["Agent"]["due_at_iso"] == "2030-01-01T03:00:00-05:00"
