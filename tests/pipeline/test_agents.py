"""The agents and the planner: which list a command means, questions and their resume, the
bounded plan, action marks (completed, failed, open), and the stores under concurrency."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

import pytest

from app.api.app_keys import REDIS
from app.memory import keys
from app.memory.lists import ListStore, NamedList
from app.pipeline.agents.lists import Target, resolve
from app.pipeline.schemas import ListCommand
from app.pipeline.state import AgentContext
from tests.pipeline_support import fake_app, last_user_message, open_chat, purposes

WEEKLY, DRUGSTORE = NamedList(name="Wocheneinkauf"), NamedList(name="Drogerie")


@pytest.mark.parametrize(
    "command, existing, answer, expected",
    [
        (
            ListCommand(list_name="wocheneinkauf", add=["Milch"]),
            [WEEKLY, DRUGSTORE],
            "",
            Target("Wocheneinkauf", create=False),
        ),
        (
            ListCommand(list_name="Einkaufsliste", add=["Milch"]),
            [],
            "",
            Target("Einkaufsliste", create=True),
        ),
        (ListCommand(list_name="Einkaufsliste", add=["Milch"]), [WEEKLY], "", None),
        (
            ListCommand(list_name="Einkaufsliste", add=["Milch"], create_list=True),
            [WEEKLY],
            "",
            Target("Einkaufsliste", create=True),
        ),
        (ListCommand(add=["Milch"]), [WEEKLY], "", Target("Wocheneinkauf", create=False)),
        (ListCommand(add=["Milch"]), [WEEKLY, DRUGSTORE], "", None),
        (ListCommand(add=["Milch"]), [], "", None),
        (
            ListCommand(add=["Milch"]),
            [WEEKLY, DRUGSTORE],
            "die Drogerie bitte",
            Target("Drogerie", create=False),
        ),
        (
            ListCommand(list_name="Einkaufsliste", remove=["Milch"]),
            [WEEKLY],
            "",
            Target("Einkaufsliste", create=False),
        ),
    ],
)
def test_which_list_a_command_means(command, existing, answer, expected):
    assert resolve(command, existing, answer) == expected


async def test_concurrent_changes_to_one_list_lose_nothing(redis_client):
    store = ListStore(redis_client, "local", "nova")
    await asyncio.gather(*(store.apply("Einkauf", add=[f"Ding {i}"]) for i in range(20)))
    [stored] = await store.all()
    assert sorted(stored.items) == sorted(f"Ding {i}" for i in range(20))


async def test_a_change_made_after_the_agent_read_the_lists_is_kept(redis_client):
    # Another process changes the list between this store's read and its write (and
    # another deletes a list it saw): the write starts again from what is stored now.
    store, other = (
        ListStore(redis_client, "local", "nova"),
        ListStore(redis_client, "local", "nova"),
    )
    await other.apply("Einkauf", add=["Milch"])
    await other.apply("Drogerie", add=["Seife"])
    await store.all()
    await other.apply("Einkauf", add=["Brot"])
    await redis_client.hdel(keys.lists("local", "nova"), "drogerie")
    change = await store.apply("Einkauf", add=["Eier"])
    assert change is not None and change.named.items == ["Milch", "Brot", "Eier"]
    assert await store.apply("Drogerie", add=["Zahnpasta"], create=False) is None
    assert [(item.name, item.items) for item in await store.all()] == [
        ("Einkauf", ["Milch", "Brot", "Eier"])
    ]


async def test_list_changes_report_what_they_did(redis_client):
    store = ListStore(redis_client, "local", "nova")
    created = await store.apply("Einkauf", add=["Milch", " milch ", "Brot"])
    assert created.created and created.added == ["Milch", "Brot"] and created.already == ["milch"]
    changed = await store.apply("EINKAUF", add=["milch"], remove=["brot", "Käse"])
    assert not changed.created and changed.already == ["milch"]
    assert changed.removed == ["Brot"] and changed.missing == ["Käse"]
    assert await store.apply("Fehlt", remove=["x"], create=False) is None
    cleared = await store.apply("Einkauf", clear=True)
    assert cleared.cleared == 1 and cleared.named.items == []


async def test_a_reminder_without_a_time_asks_when_and_the_answer_resumes(
    fake_model, make_settings, aiohttp_client
):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    due = (dt.datetime.now().astimezone() + dt.timedelta(days=1)).replace(
        hour=10, minute=0, second=0, microsecond=0
    )
    fake_model.script(
        "router", {"needs_action": True, "agents": ["reminders"]}, {"answers_pending": True}
    )
    fake_model.script("agent_reminders", {"text": "Zahnarzt"}, {"due_at": due.isoformat()})
    fake_model.script("responder", "Wann denn?", "Alles klar!")

    first = await chat.send("Erinnere mich an den Zahnarzt")
    asked = await chat.response(first)
    await chat.settle()
    told = last_user_message(fake_model.chats("responder")[0])
    assert "### Deine Rückfrage\nWann soll ich dich an „Zahnarzt“ erinnern?" in told
    assert await chat.get("/api/characters/nova/reminders") == []

    second = await chat.send("Morgen um 10")
    await chat.response(second)
    await chat.settle()

    [reminder] = await chat.get("/api/characters/nova/reminders")
    assert reminder["text"] == "Zahnarzt" and reminder["due_at"] == due.timestamp()
    assert reminder["trigger_turn_id"] == asked["turn_id"]  # the turn it was asked for in
    request = (await chat.session())[0]
    assert (request["aktion_erledigt"], request["aktion_erfolgreich"]) == (True, True)


async def test_a_time_in_the_past_is_asked_for_again(fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    past = (dt.datetime.now().astimezone() - dt.timedelta(days=2)).isoformat()
    fake_model.script("router", {"needs_action": True, "agents": ["reminders"]})
    fake_model.script("agent_reminders", {"text": "Zahnarzt", "due_at": past})

    await chat.response(await chat.send("Erinnere mich vorgestern an den Zahnarzt"))

    told = last_user_message(fake_model.chats("responder")[0])
    assert "ist schon vorbei. Wann soll ich dich an „Zahnarzt“ erinnern?" in told
    assert await chat.get("/api/characters/nova/reminders") == []


async def test_the_planner_runs_at_most_planner_max_steps(
    fake_model, make_settings, aiohttp_client, caplog
):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings, planner_max_steps=1))
    fake_model.script("router", {"needs_action": True, "agents": ["lists", "reminders"]})
    fake_model.script(
        "planner",
        {
            "steps": [
                {"agent": "lists", "task": "Setz Milch auf die Liste"},
                {"agent": "reminders", "task": "erinnere mich morgen an den Zahnarzt"},
            ]
        },
    )
    fake_model.script("agent_lists", {"list_name": "Einkauf", "add": ["Milch"]})
    caplog.set_level(logging.WARNING, logger="app.pipeline.planning")

    await chat.response(
        await chat.send("Setz Milch auf die Liste und erinnere mich morgen an den Zahnarzt")
    )

    assert "agent_lists" in purposes(fake_model)
    assert "agent_reminders" not in purposes(fake_model)
    [warning] = [r for r in caplog.records if "planner_max_steps" in r.getMessage()]
    assert warning.fields["dropped"] == ["reminders"] and warning.fields["max_steps"] == 1


async def test_a_broken_agent_marks_the_request_failed_and_says_so(
    fake_model, make_settings, aiohttp_client
):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    await app[REDIS].hset(keys.lists("local", "nova"), "einkauf", "{not json")
    fake_model.script("router", {"needs_action": True, "agents": ["lists"]})
    fake_model.script("agent_lists", {"list_name": "Einkauf", "add": ["Milch"]})

    await chat.response(await chat.send("Setz Milch auf die Liste Einkauf"))
    await chat.settle()

    told = last_user_message(fake_model.chats("responder")[0])
    assert "Das hat nicht geklappt" in told
    request = (await chat.session())[0]
    assert (request["aktion_erledigt"], request["aktion_erfolgreich"]) == (True, False)


async def test_a_question_leaves_the_rest_of_the_plan_for_the_resume(
    fake_model, make_settings, aiohttp_client
):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    lists = ListStore(app[REDIS], "local", "nova")
    await lists.apply("Wocheneinkauf", add=["Brot"])
    await lists.apply("Drogerie", add=["Shampoo"])
    due = (dt.datetime.now().astimezone() + dt.timedelta(days=1)).isoformat()
    fake_model.script(
        "router",
        {"needs_action": True, "agents": ["lists", "reminders"]},
        {"answers_pending": True},
    )
    fake_model.script(
        "planner",
        {
            "steps": [
                {"agent": "lists", "task": "Setz Milch auf die Liste"},
                {"agent": "reminders", "task": "erinnere mich morgen an den Zahnarzt"},
            ]
        },
    )
    fake_model.script("agent_lists", {"add": ["Milch"]}, {"list_name": "Drogerie"})
    fake_model.script("agent_reminders", {"text": "Zahnarzt", "due_at": due})

    await chat.response(
        await chat.send("Setz Milch auf die Liste und erinnere mich morgen an den Zahnarzt")
    )
    await chat.settle()
    assert "agent_reminders" not in purposes(fake_model)  # waits behind the question

    await chat.response(await chat.send("Drogerie"))
    await chat.settle()

    lists_now = {i["name"]: i["items"] for i in await chat.get("/api/characters/nova/lists")}
    assert lists_now["Drogerie"] == ["Shampoo", "Milch"]
    [reminder] = await chat.get("/api/characters/nova/reminders")
    assert reminder["text"] == "Zahnarzt"
    assert purposes(fake_model).count("planner") == 1


async def test_a_rejected_turn_changes_no_list_no_reminder_and_marks_nothing(
    fake_model, make_settings, aiohttp_client
):
    # Agents return what they intend; the dispatcher applies it with the turn, after the
    # tribunal. An answer the tribunal rejects must leave every store as it was.
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    lists = ListStore(app[REDIS], "local", "nova")
    await lists.apply("Einkauf", add=["Brot"])
    due = (dt.datetime.now().astimezone() + dt.timedelta(days=1)).isoformat()
    fake_model.script("router", {"needs_action": True, "agents": ["lists", "reminders"]})
    fake_model.script(
        "planner",
        {
            "steps": [
                {"agent": "lists", "task": "Milch auf Einkauf"},
                {"agent": "reminders", "task": "morgen Zahnarzt"},
            ]
        },
    )
    fake_model.script("agent_lists", {"list_name": "Einkauf", "add": ["Milch"]})
    fake_model.script("agent_reminders", {"text": "Zahnarzt", "due_at": due})
    fake_model.script("responder", "   ")
    fake_model.script("corrector", "")

    failed = await chat.failure(await chat.send("Milch auf Einkauf und erinnere mich morgen"))
    await chat.settle()

    assert failed["reason"] == "tribunal_rejected"
    assert [item.items for item in await lists.all()] == [["Brot"]]
    assert await chat.get("/api/characters/nova/reminders") == []
    assert await app[REDIS].zcard(keys.reminders_due()) == 0
    [request] = await chat.session()
    assert not request["aktion_erledigt"] and not request["aktion_erfolgreich"]


async def test_an_accepted_turn_applies_its_agents_changes_with_the_turn(
    fake_model, make_settings, aiohttp_client
):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    fake_model.script("router", {"needs_action": True, "agents": ["lists"]})
    fake_model.script("agent_lists", {"list_name": "Einkauf", "add": ["Milch"]})
    fake_model.script("responder", "Steht drauf.")

    await chat.response(await chat.send("Setz Milch auf die Liste Einkauf"))
    await chat.settle()

    [einkauf] = await ListStore(app[REDIS], "local", "nova").all()
    assert (einkauf.name, einkauf.items) == ("Einkauf", ["Milch"])
    request, answer = await chat.session()
    assert (request["aktion_erledigt"], request["aktion_erfolgreich"]) == (True, True)
    assert answer["inhalt"] == "Steht drauf."


async def test_an_agent_that_breaks_down_is_reported_to_the_responder_not_claimed(
    fake_model, make_settings, aiohttp_client, monkeypatch, caplog
):
    from app.pipeline import agents

    async def broken(*_args):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(agents.AGENTS, "lists", broken)
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))
    fake_model.script("router", {"needs_action": True, "agents": ["lists"]})
    fake_model.script("responder", "Oh, das hat leider nicht geklappt.")
    caplog.set_level(logging.ERROR, logger="app.pipeline.planning")

    answer = await chat.response(await chat.send("Setz Milch auf die Einkaufsliste"))
    await chat.settle()

    assert answer["text"] == "Oh, das hat leider nicht geklappt."
    told = last_user_message(fake_model.chats("responder")[0])
    assert "Das hat nicht geklappt: Beim Ausführen ist ein Fehler passiert." in told
    assert await chat.get("/api/characters/nova/lists") == []
    [record] = [r for r in caplog.records if r.getMessage() == "agent failed"]
    assert record.fields["agent"] == "lists" and "disk on fire" in record.exc_text
    request = (await chat.session())[0]
    assert request["aktion_erfolgreich"] is not True


def test_an_unreadable_pending_command_is_logged_and_the_answer_stands_alone(caplog):
    from app.pipeline.agents import lists as lists_agent
    from app.pipeline.agents import reminders as reminders_agent
    from app.pipeline.schemas import ReminderCommand

    caplog.set_level(logging.WARNING, logger="app.pipeline.agents.follow_up")
    answer = ListCommand(list_name="Drogerie")
    assert lists_agent.resumed(answer, AgentContext(command={"add": "not a list"})) == answer
    kept = lists_agent.resumed(answer, AgentContext(command={"add": ["Seife"]}))
    assert kept.add == ["Seife"] and kept.list_name == "Drogerie"
    time_only = ReminderCommand(due_at="2030-01-01T10:00:00+01:00")
    assert reminders_agent.resumed(time_only, AgentContext(command={"text": 5})) == time_only
    assert [r.fields["agent"] for r in caplog.records] == ["lists", "reminders"]
