"""Long-term memory end to end through the server (design §3a; issue 14): tell a fact, reset
the session, ask about it — with the scripted fake model the responder's prompt holds the
fact, with the offline model the reply uses it. Promotion at and below the threshold; the
Pixie queue survives a kill; a turn arriving while the Pixie worker consolidates waits at
most one model call."""

from __future__ import annotations

import datetime as dt
import time

from app.api.app_keys import PIXIE, REDIS
from app.memory import keys
from app.memory.pixie_queue import PixieQueue, new_trigger
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import Reply
from tests.pipeline_support import Chat, fake_app, last_user_message, open_chat
from tests.waiting import until

FACT = "Meine Schwester heißt Jana und wohnt in Leipzig."


async def memories(chat: Chat, query: str = "", **params: str) -> list[dict]:
    response = await chat.client.get(f"/api/characters/{chat.character_id}/memories",
                                     params={"q": query, **params}, headers=AUTH)
    assert response.status == 200, await response.text()
    return await response.json()


async def drained(chat: Chat, user_id: str = "local") -> None:
    """Wait until the runtime is idle and the pair's Pixie queue (and its processing list) is
    empty, the worker woken at each look."""
    await chat.settle()
    redis = chat.app[REDIS]
    worker = chat.app[PIXIE]

    async def still_queued() -> int:
        worker.wake()
        return (await redis.llen(keys.pixie_queue(user_id, "nova"))
                + await redis.llen(keys.pixie_processing(user_id, "nova")) + worker.busy)

    await until(still_queued, lambda queued: queued == 0,
                what=f"{user_id}'s Pixie queue to drain")


async def reset_session(chat: Chat) -> None:
    response = await chat.client.delete("/api/characters/nova/session", headers=AUTH)
    assert response.status == 204


async def test_offline_nova_knows_tomorrow_what_she_was_told_today(aiohttp_client, make_settings):
    app = create_app(make_settings(llm_provider="offline", pixie_poll_seconds=0.05),
                     local_token=TOKEN)
    chat = await open_chat(aiohttp_client, app)
    await chat.response(await chat.send(FACT))
    await drained(chat)
    kept = await memories(chat)
    assert [m["text"] for m in kept] == [FACT]
    assert kept[0]["kind"] == "person" and kept[0]["source_message_ids"]
    await reset_session(chat)
    assert await chat.session() == []
    answer = await chat.response(await chat.send("Wie heißt meine Schwester?"))
    assert "Jana" in answer["text"]
    # The usage mark is written by the Pixie worker, off the turn's path.
    await until(lambda: memories(chat), lambda kept: kept[0]["last_used_at"] is not None,
                what="the memory's usage mark")
    await chat.close()


def promote(fake_model, importance: float = 0.9, *memories: dict) -> None:
    """The next salience is `importance`; the next consolidation keeps `memories`."""
    fake_model.script("salience", {"importance": importance, "segments": []})
    if memories:
        fake_model.script("consolidation", {"memories": list(memories)})


async def test_the_responder_prompt_holds_the_fact_after_a_session_reset(
        aiohttp_client, fake_model, make_settings):
    promote(fake_model, 0.9, {"action": "remember", "kind": "person",
                              "text": "Schwester heißt Jana und wohnt in Leipzig"})
    fake_model.script("responder", "Schön, dass du von ihr erzählst!")
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings,
                                                    pixie_poll_seconds=0.05))
    sent = await chat.send(FACT)
    await chat.response(sent)
    await drained(chat)
    [consolidation] = fake_model.chats("consolidation")
    frame = last_user_message(consolidation)
    assert FACT in frame
    assert "Schön, dass du" not in str(consolidation.messages)  # no assistant text in it
    [memory] = await memories(chat)
    assert memory["source_message_ids"] == [sent]

    await reset_session(chat)
    await chat.response(await chat.send("Weißt du noch, wo meine Schwester wohnt?"))
    responder = fake_model.chats("responder")[-1]
    prompt = last_user_message(responder)
    day = dt.datetime.fromtimestamp(memory["created_at"]).date().isoformat()
    assert (f"### Was du über den Menschen weißt\n- ({day}) "
            "Schwester heißt Jana und wohnt in Leipzig") in prompt
    assert FACT not in prompt  # the session is gone: only long-term memory knows it
    assert "Schwester heißt Jana" in last_user_message(fake_model.chats("thinker")[-1])
    await chat.close()


async def test_promotion_at_the_threshold_and_not_below(aiohttp_client, fake_model,
                                                       make_settings):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings,
                                                    pixie_poll_seconds=0.05))
    promote(fake_model, 0.69)
    await chat.response(await chat.send("Ich mag Tee."))
    await drained(chat)
    assert fake_model.chats("consolidation") == []
    promote(fake_model, 0.7, {"action": "remember", "text": "Ich mag Kaffee"})
    await chat.response(await chat.send("Ich mag Kaffee."))
    await drained(chat)
    assert len(fake_model.chats("consolidation")) == 1
    assert [m["text"] for m in await memories(chat)] == ["Ich mag Kaffee"]
    await chat.close()


async def test_what_only_the_character_said_never_becomes_a_fact_about_the_user(
        aiohttp_client, fake_model, make_settings):
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings,
                                                    pixie_poll_seconds=0.05))
    fake_model.script("responder", "Deine Schwester heißt bestimmt Anna und lebt in Rom.")
    await chat.response(await chat.send("Rate mal, wie meine Schwester heißt."))
    promote(fake_model, 0.9,
            {"action": "remember", "text": "Schwester heißt Anna und lebt in Rom"},
            {"action": "remember", "text": "Hat eine Schwester"})
    await chat.response(await chat.send("Ja, das stimmt, meine Schwester!"))
    await drained(chat)
    assert [m["text"] for m in await memories(chat)] == ["Hat eine Schwester"]
    await chat.close()


async def test_a_turn_arriving_while_pixie_consolidates_waits_at_most_one_model_call(
        aiohttp_client, fake_model, make_settings):
    model_call = 0.8
    fake_model.always("consolidation", Reply({"memories": []}, delay=model_call))
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings,
                                                    pixie_poll_seconds=0.05))
    queue = PixieQueue(chat.app[REDIS], "someone", "nova")
    for text in ("Ich mag Tee.", "Ich mag Kaffee.", "Ich mag Kakao."):
        await queue.push(new_trigger("someone", "nova", turn_id="t", message_ids=["m"],
                                     text=text, segments=[], importance=0.9))
    chat.app[PIXIE].wake()
    await fake_model.wait_requests(1, "consolidation")
    sent_at = time.monotonic()
    await chat.response(await chat.send("Hallo, bist du da?"))
    [perception] = fake_model.chats("perception")
    waited = perception.at - sent_at
    assert waited < 2 * model_call, f"the turn waited {waited:.2f} s (one call: {model_call} s)"
    # The background work went on afterwards, and the turn went first where both waited.
    await drained(chat, "someone")
    purposes = [r.purpose for r in fake_model.chats()]
    assert purposes.count("consolidation") == 3
    assert purposes.index("perception") < len(purposes) - 1 - purposes[::-1].index(
        "consolidation")
    await chat.close()


async def test_a_plan_told_yesterday_becomes_a_reflection_the_next_day(
        aiohttp_client, fake_model, make_settings):
    """"Morgen hab ich das Vorstellungsgespräch" → the next day, after a quiet hour, Nova asks
    how it went — once; the impulse's prompt names the plan."""
    import msgspec

    from app.api.app_keys import DB, REMINDER_CLOCK, SETTINGS
    from app.core.clock import zone_named
    from app.memory.long_term import Change, LongTermMemory
    from app.memory.state import load_state, save_state

    app = fake_app(fake_model, make_settings, idle_reflection_minutes=60,
                   pixie_poll_seconds=0.05)
    chat = await open_chat(aiohttp_client, app)
    await chat.response(await chat.send("Hallo"))
    await chat.settle()
    await reset_session(chat)  # a day later the session is long gone
    # The latest noon, not the wall clock: two hours before 01:00 is yesterday's calendar day,
    # and the test is about a plan from yesterday beside one from today.
    app_zone = zone_named(app[SETTINGS].timezone)
    wall = dt.datetime.fromtimestamp(time.time(), app_zone)
    noon = wall.replace(hour=12, minute=0, second=0, microsecond=0)
    now = (noon if noon <= wall else noon - dt.timedelta(days=1)).timestamp()
    yesterday = now - 26 * 3600
    store = LongTermMemory(app[DB])
    await store.apply("plan", "local", "nova",
                      [Change("remember", "Morgen hab ich das Vorstellungsgespräch.", "plan")],
                      ["m1"], yesterday)
    await store.apply("today", "local", "nova",
                      [Change("remember", "Morgen fahre ich nach Köln.", "plan")], ["m2"],
                      now - 2 * 3600)
    state = await load_state(app[REDIS], "local", "nova")
    await save_state(app[REDIS], "local", "nova",
                     msgspec.structs.replace(state, user_time=now - 61 * 60))
    clock = app[REMINDER_CLOCK]
    assert await clock.reflect_when_idle(now) == 1
    impulse = await chat.response(origin="own_impulse")
    await chat.settle()
    prompt = last_user_message(fake_model.chats("responder")[-1])
    assert "Morgen hab ich das Vorstellungsgespräch." in prompt
    assert "wie es gelaufen ist" in prompt
    assert impulse["message_ids"] == []
    # Capped: once per quiet period, and the plan is not brought up again.
    assert await clock.reflect_when_idle(now + 1) == 0
    [plan] = [m for m in await store.list("local", "nova") if "Vorstellungs" in m.text]
    assert plan.reflected_at is not None
    await chat.close()


async def test_offline_the_same_fact_refreshes_and_a_correction_supersedes(aiohttp_client,
                                                                          make_settings):
    app = create_app(make_settings(llm_provider="offline", pixie_poll_seconds=0.05),
                     local_token=TOKEN)
    chat = await open_chat(aiohttp_client, app)
    first = await chat.send(FACT)
    await chat.response(first)
    await drained(chat)
    again = await chat.send(FACT)
    await chat.response(again)
    await drained(chat)
    [memory] = await memories(chat)
    assert memory["source_message_ids"] == [first, again]  # refreshed, no duplicate
    await chat.response(await chat.send("Nein, nicht Leipzig, Dresden!"))
    await drained(chat)
    assert [m["text"] for m in await memories(chat)] == [
        "Meine Schwester heißt Jana und wohnt in Dresden."]
    every = await memories(chat, include_superseded="true")
    old = next(m for m in every if m["memory_id"] == memory["memory_id"])
    assert old["superseded_by"] == (await memories(chat))[0]["memory_id"]
    answer = await chat.response(await chat.send("Wo wohnt meine Schwester?"))
    assert "Dresden" in answer["text"] and "Leipzig" not in answer["text"]
    await chat.close()
