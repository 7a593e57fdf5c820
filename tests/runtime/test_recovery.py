"""Recovery (design §5 Lifecycle): what a stop in the middle of a turn leaves behind is retried
once or failed with a notice, taken events are restored, stale markers cleared, waiting
messages answered.

In-process, an app stopped mid-turn leaves Redis exactly as a crash would (its turn in path 1
or 2, its event taken, its marker set); a second app on the same data dir recovers it. The
`kill -9` of the real entry point is in `test_runtime_kill.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from app.api.app_keys import REDIS
from app.memory import keys
from app.pipeline.vocabulary import Pipelines
from app.runtime.minimal import respond_once, store_user_turn
from tests.conftest import AUTH
from tests.fakemodel import Fault
from tests.pipeline_support import WAIT, Chat
from tests.runtime_support import responders, runtime_app
from tests.waiting import wait_message


@contextlib.asynccontextmanager
async def running(app: web.Application) -> AsyncIterator[Chat]:
    """Start `app`, connect a tab; on exit stop the app (its runtime stops where it stands)."""
    client = TestClient(TestServer(app))
    await client.start_server()
    chat = await Chat(client=client, ws=await client.ws_connect("/api/ws", headers=AUTH)).start()
    try:
        yield chat
    finally:
        await chat.close()
        await client.close()


async def test_a_turn_stopped_in_path2_runs_again_with_the_same_id_and_one_more_attempt(
        fake_model, make_settings):
    fake_model.script("responder", Fault.hang(), "Da bin ich wieder.", "Und weiter.")
    async with running(runtime_app(fake_model, make_settings)) as chat:
        sent = await chat.send("Bist du da?")
        await fake_model.wait_requests(1, "responder")  # path 2 hangs in the model call
        waiting = await chat.send("Hallo?")        # queued behind the marker
        before = await chat.get(f"/api/messages/{sent}")
        assert before["state"] == "path2"
        redis = chat.app[REDIS]
        assert await redis.llen(keys.event_processing("local", "nova")) == 1
        assert await redis.get(keys.turn_marker("local", "nova")) is not None

    async with running(runtime_app(fake_model, make_settings)) as chat:
        done = await wait_message(chat.get, sent)
        assert done["turn_id"] == before["turn_id"] and done["state"] == "delivered"
        turn = await chat.get(f"/api/turns/{done['turn_id']}")
        assert turn["attempts"] == 2
        assert [h["state"] for h in turn["history"]] == [
            "queued", "path1", "path2", "queued", "path2", "delivered"]
        # The message queued before the stop is answered after the recovered turn.
        assert (await wait_message(chat.get, waiting, ("delivered",)))["state"] == "delivered"
        await chat.settle()
        turns = await chat.session()
        assert [(t["rolle"], t["inhalt"]) for t in turns] == [
            ("user", "Bist du da?"), ("assistant", "Da bin ich wieder."),
            ("user", "Hallo?"), ("assistant", "Und weiter.")]  # the user turn stored once
        redis = chat.app[REDIS]
        assert await redis.llen(keys.event_processing("local", "nova")) == 0
        assert await redis.get(keys.turn_marker("local", "nova")) is None


async def test_a_turn_out_of_attempts_fails_with_a_notice_after_the_restart(fake_model,
                                                                          make_settings):
    fake_model.script("responder", Fault.hang(), "Später.")
    async with running(runtime_app(fake_model, make_settings, max_turn_attempts=1)) as chat:
        sent = await chat.send("Eins")
        await fake_model.wait_requests(1, "responder")

    async with running(runtime_app(fake_model, make_settings, max_turn_attempts=1)) as chat:
        failed = await wait_message(chat.get, sent, ("failed", "delivered"))
        assert failed["state"] == "failed"
        turn = await chat.get(f"/api/turns/{failed['turn_id']}")
        assert turn["reason"] == "crashed" and turn["attempts"] == 1
        # Its restored event is dropped, the pair is free: the next message is answered.
        answer = await chat.response(await chat.send("Zwei"))
        assert answer["text"] == "Später."
        assert len(responders(fake_model)) == 2
        redis = chat.app[REDIS]
        assert await redis.llen(keys.event_processing("local", "nova")) == 0
        assert await redis.llen(keys.event_queue("local", "nova")) == 0


async def test_a_turn_stopped_in_path1_reruns_path1_from_its_message_records(
        fake_model, make_settings):
    entered = asyncio.Event()

    async def stuck_path1(ctx, block):
        entered.set()
        await asyncio.Event().wait()

    fake_model.script("responder", "Gelesen.")
    stuck = Pipelines(path1=stuck_path1, path2=respond_once)
    async with running(runtime_app(fake_model, make_settings, pipelines=stuck)) as chat:
        first, second = await chat.send("eins"), await chat.send("zwei")
        await asyncio.wait_for(entered.wait(), WAIT)
        taken = await chat.get(f"/api/messages/{first}")
        assert taken["state"] == "path1"

    async with running(runtime_app(fake_model, make_settings)) as chat:
        done = await wait_message(chat.get, first)
        assert done["state"] == "delivered" and done["turn_id"] == taken["turn_id"]
        await wait_message(chat.get, second, ("delivered",))
        await chat.settle()
        turn = await chat.get(f"/api/turns/{done['turn_id']}")
        assert [h["state"] for h in turn["history"]] == [
            "queued", "path1", "queued", "path1", "path2", "delivered"]
        turns = await chat.session()
        assert turns[0]["rolle"] == "user" and turns[0]["inhalt"].startswith("eins")
        assert len([t for t in turns if t["rolle"] == "user"]) == len(
            {t["turn_id"] for t in turns if t["rolle"] == "user"})  # each user turn once


async def test_messages_accepted_before_a_stop_are_answered_after_the_start(
        fake_model, make_settings):
    async def hold(ctx, block):
        await asyncio.Event().wait()

    held = Pipelines(path1=hold, path2=hold)
    async with running(runtime_app(fake_model, make_settings, pipelines=held,
                                   input_window_seconds=0.0)) as chat:
        sent = [await chat.send(f"m{i}") for i in range(3)]

    fake_model.always("responder", "Antwort.")
    normal = Pipelines(path1=store_user_turn, path2=respond_once)
    async with running(runtime_app(fake_model, make_settings, pipelines=normal)) as chat:
        for message_id in sent:
            assert (await wait_message(chat.get, message_id))["state"] == (
                "delivered")
        await chat.settle()
