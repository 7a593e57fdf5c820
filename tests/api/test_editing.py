"""Issue 21, item 2: everything the user made can be changed or removed — list items, whole
lists and reminders, by `PATCH`/`DELETE` through the real server: owner-checked (another
user's or another character's is 404), the error shape on bad input with nothing written,
and a turn's agent change committed at the same moment is not lost (nor is the user's)."""

from __future__ import annotations

import asyncio
import time
from typing import Any
from urllib.parse import quote

import pytest
from redis.asyncio.client import Pipeline

from app.api.app_keys import REDIS, REMINDER_CLOCK
from app.memory import keys
from app.memory.commit import commit
from app.memory.lists import ListEdit, ListStore
from app.memory.reminders import Reminder, ReminderChange, ReminderStore
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN

LISTS = "/api/characters/nova/lists"
REMINDERS = "/api/characters/nova/reminders"


def item_url(name: str, item: str | None = None) -> str:
    url = f"{LISTS}/{quote(name, safe='')}"
    return url if item is None else f"{url}/items/{quote(item, safe='')}"


@pytest.fixture
async def luna_client(aiohttp_client, make_settings, data_dir):
    folder = data_dir / "characters"
    folder.mkdir()
    (folder / "luna.toml").write_text('id = "luna"\nname = "Luna"\nlanguage = "de"\n'
                                      'persona = "Du bist Luna."\n', encoding="utf-8")
    return await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                           local_token=TOKEN))


async def lists_of(client) -> dict[str, list[str]]:
    response = await client.get(LISTS, headers=AUTH)
    return {item["name"]: item["items"] for item in await response.json()}


async def error_of(response) -> str:
    return (await response.json())["error"]["code"]


async def seed(client, user: str = "local", character: str = "nova") -> ListStore:
    store = ListStore(client.app[REDIS], user, character)
    await store.apply("Einkaufsliste", add=["Milch", "Eier", "2 kg Mehl/Zucker"])
    await store.apply("Baumarkt", add=["Schrauben"])
    return store


# --- lists ---------------------------------------------------------------------------------

async def test_an_item_is_changed_in_place_and_crossed_off(client):
    await seed(client)
    changed = await client.patch(item_url("einkaufsliste", "eier"), json={"text": "6 Eier"},
                                 headers=AUTH)
    assert changed.status == 200
    assert (await changed.json())["items"] == ["Milch", "6 Eier", "2 kg Mehl/Zucker"]
    gone = await client.delete(item_url("Einkaufsliste", "2 kg Mehl/Zucker"), headers=AUTH)
    assert gone.status == 200 and (await gone.json())["items"] == ["Milch", "6 Eier"]
    again = await client.delete(item_url("Einkaufsliste", "2 kg Mehl/Zucker"), headers=AUTH)
    assert again.status == 404 and await error_of(again) == "not_found"
    assert await lists_of(client) == {"Einkaufsliste": ["Milch", "6 Eier"],
                                      "Baumarkt": ["Schrauben"]}


async def test_an_item_cannot_become_another_item_of_its_list(client):
    await seed(client)
    refused = await client.patch(item_url("Einkaufsliste", "Eier"), json={"text": " milch "},
                                 headers=AUTH)
    assert refused.status == 409 and await error_of(refused) == "item_exists"
    same = await client.patch(item_url("Einkaufsliste", "Eier"), json={"text": "EIER"},
                              headers=AUTH)  # its own spelling may change
    assert same.status == 200
    assert (await lists_of(client))["Einkaufsliste"] == ["Milch", "EIER", "2 kg Mehl/Zucker"]


async def test_a_list_is_renamed_and_removed(client):
    await seed(client)
    renamed = await client.patch(item_url("baumarkt"), json={"name": "Werkzeug & Co"},
                                 headers=AUTH)
    assert renamed.status == 200 and (await renamed.json())["name"] == "Werkzeug & Co"
    clash = await client.patch(item_url("Werkzeug & Co"), json={"name": "EINKAUFSLISTE"},
                               headers=AUTH)
    assert clash.status == 409 and await error_of(clash) == "list_exists"
    assert await lists_of(client) == {"Einkaufsliste": ["Milch", "Eier", "2 kg Mehl/Zucker"],
                                      "Werkzeug & Co": ["Schrauben"]}
    assert (await client.delete(item_url("werkzeug & co"), headers=AUTH)).status == 204
    assert (await client.delete(item_url("Werkzeug & Co"), headers=AUTH)).status == 404
    assert list(await lists_of(client)) == ["Einkaufsliste"]


@pytest.mark.parametrize("body", [{}, {"text": ""}, {"text": "  \u200b "}, {"text": 5},
                                  {"text": "Brot", "extra": 1}, "not an object", None])
async def test_a_bad_item_edit_is_400_and_writes_nothing(client, body):
    await seed(client)
    before = await lists_of(client)
    kwargs: dict[str, Any] = {"data": b"{"} if body is None else {"json": body}
    response = await client.patch(item_url("Einkaufsliste", "Milch"), headers=AUTH, **kwargs)
    assert response.status == 400
    assert set((await response.json())["error"]) == {"code", "message"}
    assert await lists_of(client) == before


async def test_a_too_long_name_is_413_and_writes_nothing(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline",
                                                           max_message_chars=20),
                                             local_token=TOKEN))
    await seed(client)
    response = await client.patch(item_url("Baumarkt"), json={"name": "x" * 21}, headers=AUTH)
    assert response.status == 413 and await error_of(response) == "text_too_long"
    assert "Baumarkt" in await lists_of(client)


async def test_another_users_or_characters_lists_are_404_and_stay(luna_client):
    client = luna_client
    bob = await seed(client, user="bob")
    luna = await seed(client, character="luna")
    for method, url, body in [("DELETE", item_url("Einkaufsliste", "Milch"), None),
                              ("PATCH", item_url("Einkaufsliste", "Milch"), {"text": "Hafer"}),
                              ("DELETE", item_url("Baumarkt"), None),
                              ("PATCH", item_url("Baumarkt"), {"name": "Neu"})]:
        response = await client.request(method, url, json=body, headers=AUTH)
        assert response.status == 404, (method, url)
    for store in (bob, luna):
        assert {item.name: item.items for item in await store.all()} == {
            "Einkaufsliste": ["Milch", "Eier", "2 kg Mehl/Zucker"], "Baumarkt": ["Schrauben"]}
    unknown = await client.delete("/api/characters/nobody/lists/Baumarkt", headers=AUTH)
    assert unknown.status == 404 and await error_of(unknown) == "unknown_character"


async def test_list_edits_need_auth(client):
    await seed(client)
    assert (await client.delete(item_url("Baumarkt"))).status == 401
    assert "Baumarkt" in await lists_of(client)


# --- reminders -----------------------------------------------------------------------------

async def create(client, text: str = "Zahnarzt", ahead: float = 3600) -> dict[str, Any]:
    response = await client.post(REMINDERS, json={"text": text, "due_at": time.time() + ahead},
                                 headers=AUTH)
    assert response.status == 201, await response.text()
    return await response.json()


async def reminders_of(client) -> list[dict[str, Any]]:
    return await (await client.get(REMINDERS, headers=AUTH)).json()


async def due_index(client) -> dict[str, float]:
    return dict(await client.app[REDIS].zrange(keys.reminders_due(), 0, -1, withscores=True))


async def test_a_reminder_gets_a_new_text_and_time(client):
    made = await create(client)
    later = time.time() + 7200
    response = await client.patch(f"{REMINDERS}/{made['id']}",
                                  json={"text": "Zahnarzt Dr. Ohm", "due_at": later},
                                  headers=AUTH)
    assert response.status == 200
    changed = await response.json()
    assert (changed["text"], changed["due_at"], changed["status"]) == (
        "Zahnarzt Dr. Ohm", later, "pending")
    member = keys.reminder_member("local", "nova", made["id"])
    assert await due_index(client) == {member: later}


@pytest.mark.parametrize("body, code", [
    ({"due_at": "2000-01-01T00:00:00Z"}, "invalid_due_at"),
    ({"due_at": "9999-12-31T23:59:59+00:00"}, "invalid_due_at"),
    ({"due_at": "soon"}, "invalid_due_at"),
    ({"text": ""}, "empty_text"),
    ({}, "invalid_request"),
    ({"done": True, "due_at": 4102444800}, "invalid_request"),
    ({"status": "done"}, "invalid_request"),
    ({"done": "yes"}, "invalid_request"),
])
async def test_a_bad_reminder_change_is_400_and_writes_nothing(client, body, code):
    made = await create(client)
    before = (await reminders_of(client), await due_index(client))
    response = await client.patch(f"{REMINDERS}/{made['id']}", json=body, headers=AUTH)
    assert response.status == 400 and await error_of(response) == code
    assert (await reminders_of(client), await due_index(client)) == before


async def test_a_reminder_marked_done_does_not_come_and_can_be_opened_again(client):
    made = await create(client)
    done = await client.patch(f"{REMINDERS}/{made['id']}", json={"done": True}, headers=AUTH)
    assert done.status == 200 and (await done.json())["status"] == "done"
    assert await due_index(client) == {}
    reopened = await client.patch(f"{REMINDERS}/{made['id']}", json={"done": False},
                                  headers=AUTH)
    assert (await reopened.json())["status"] == "pending"
    assert list(await due_index(client)) == [keys.reminder_member("local", "nova", made["id"])]


async def claim_as_the_clock(client, reminder_id: str) -> Reminder:
    """Makes the reminder due and claims it the way the clock does. The app's own clock is
    stopped first: it would otherwise claim (and deliver) a due reminder before the test."""
    await client.app[REMINDER_CLOCK].stop()
    member = keys.reminder_member("local", "nova", reminder_id)
    await client.app[REDIS].zadd(keys.reminders_due(), {member: time.time() - 1})
    claimed = await ReminderStore(client.app[REDIS]).claim(member)
    assert claimed is not None
    return claimed


async def fire(client, reminder_id: str) -> None:
    """What the clock does with a due reminder: claim it, deliver it, mark it fired."""
    claimed = await claim_as_the_clock(client, reminder_id)
    await ReminderStore(client.app[REDIS]).mark_fired(claimed, "turn-1")


async def test_a_fired_reminder_is_snoozed_or_marked_done(client):
    made = await create(client)
    await fire(client, made["id"])
    assert (await reminders_of(client))[0]["status"] == "fired"
    snooze = time.time() + 600
    snoozed = await client.patch(f"{REMINDERS}/{made['id']}", json={"due_at": snooze},
                                 headers=AUTH)
    assert (await snoozed.json())["status"] == "pending"
    assert list((await due_index(client)).values()) == [snooze]
    await fire(client, made["id"])
    done = await client.patch(f"{REMINDERS}/{made['id']}", json={"done": True}, headers=AUTH)
    assert (await done.json())["status"] == "done" and await due_index(client) == {}
    again = await client.patch(f"{REMINDERS}/{made['id']}", json={"done": False}, headers=AUTH)
    assert (await again.json())["status"] == "fired"  # it had come: open as it was


async def test_a_snooze_keeps_the_cap(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(make_settings(
        llm_provider="offline", max_reminders_per_pair=1), local_token=TOKEN))
    first = await create(client, "Zahnarzt")
    await fire(client, first["id"])
    await create(client, "Müll")  # the one open reminder the cap allows
    refused = await client.patch(f"{REMINDERS}/{first['id']}",
                                 json={"due_at": time.time() + 600}, headers=AUTH)
    assert refused.status == 429 and await error_of(refused) == "too_many_reminders"
    assert [r["status"] for r in await reminders_of(client)] == ["fired", "pending"]


async def test_a_reminder_being_delivered_cannot_be_changed_but_can_be_deleted(client):
    made = await create(client)
    claimed = await claim_as_the_clock(client, made["id"])
    store = ReminderStore(client.app[REDIS])
    busy = await client.patch(f"{REMINDERS}/{made['id']}", json={"text": "x"}, headers=AUTH)
    assert busy.status == 409 and await error_of(busy) == "reminder_busy"
    assert (await client.delete(f"{REMINDERS}/{made['id']}", headers=AUTH)).status == 204
    assert await store.mark_fired(claimed, "turn-1") is None  # not written back
    assert await reminders_of(client) == []
    assert await client.app[REDIS].zcard(keys.reminders_claimed()) == 0


async def test_a_deleted_reminder_is_gone_from_the_list_and_the_clock(client):
    made = await create(client)
    assert (await client.delete(f"{REMINDERS}/{made['id']}", headers=AUTH)).status == 204
    assert await reminders_of(client) == [] and await due_index(client) == {}
    again = await client.delete(f"{REMINDERS}/{made['id']}", headers=AUTH)
    assert again.status == 404 and await error_of(again) == "not_found"


async def test_another_users_or_characters_reminders_are_404_and_stay(luna_client):
    client = luna_client
    store = ReminderStore(client.app[REDIS])
    due = time.time() + 3600
    bob = await store.add("bob", "nova", "Bobs Termin", due)
    luna = await store.add("local", "luna", "Lunas Termin", due)
    for reminder in (bob, luna):
        url = f"{REMINDERS}/{reminder.id}"
        assert (await client.patch(url, json={"text": "x"}, headers=AUTH)).status == 404
        assert (await client.delete(url, headers=AUTH)).status == 404
    assert [r.text for r in await store.list("bob", "nova")] == ["Bobs Termin"]
    assert [r.text for r in await store.list("local", "luna")] == ["Lunas Termin"]
    assert len(await due_index(client)) == 2


# --- an API change and a turn's commit at the same moment ---------------------------------------

class Paused:
    """A turn's write whose commit stops after its reads until `go` is set: the moment a user
    change lands between a commit's read and its write."""

    def __init__(self, write: Any) -> None:
        self.write = write
        self.watch = write.watch
        self.read_once = asyncio.Event()
        self.go = asyncio.Event()

    async def read(self, pipe: Pipeline) -> None:
        await self.write.read(pipe)
        if not self.read_once.is_set():
            self.read_once.set()
            await self.go.wait()

    def queue(self, pipe: Pipeline) -> Any:
        return self.write.queue(pipe)


async def test_a_list_change_and_a_turns_list_edit_keep_each_other(client):
    store = await seed(client)
    turn = Paused(store.edit_write(ListEdit(list_name="Einkaufsliste", add=["Brot"],
                                            create=False)))
    committing = asyncio.create_task(commit(client.app[REDIS], None, [turn]))
    await turn.read_once.wait()
    response = await client.delete(item_url("Einkaufsliste", "Milch"), headers=AUTH)
    assert response.status == 200
    turn.go.set()
    await committing
    assert (await lists_of(client))["Einkaufsliste"] == ["Eier", "2 kg Mehl/Zucker", "Brot"]


async def test_a_reminder_edit_and_a_turns_move_keep_each_other(client):
    made = await create(client)
    later = time.time() + 5000
    turn = Paused(ReminderStore(client.app[REDIS]).change_write(ReminderChange(
        user_id="local", character_id="nova", reminder_id=made["id"], due_at=later)))
    committing = asyncio.create_task(commit(client.app[REDIS], None, [turn]))
    await turn.read_once.wait()
    response = await client.patch(f"{REMINDERS}/{made['id']}", json={"text": "Zahnarzt 2"},
                                  headers=AUTH)
    assert response.status == 200
    turn.go.set()
    await committing
    [stored] = await reminders_of(client)
    assert (stored["text"], stored["due_at"], stored["status"]) == ("Zahnarzt 2", later,
                                                                   "pending")
    assert list((await due_index(client)).values()) == [later]


async def test_a_reminder_deleted_while_a_turn_moves_it_stays_deleted(client):
    made = await create(client)
    turn = Paused(ReminderStore(client.app[REDIS]).change_write(ReminderChange(
        user_id="local", character_id="nova", reminder_id=made["id"],
        due_at=time.time() + 5000)))
    committing = asyncio.create_task(commit(client.app[REDIS], None, [turn]))
    await turn.read_once.wait()
    assert (await client.delete(f"{REMINDERS}/{made['id']}", headers=AUTH)).status == 204
    turn.go.set()
    await committing
    assert not turn.write.done
    assert await reminders_of(client) == [] and await due_index(client) == {}
