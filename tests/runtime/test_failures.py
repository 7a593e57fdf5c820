"""No accepted message without an answer or a failure notice (design §5): model failure, no
run slot in time, a session reset, a late result — through the real server."""

from __future__ import annotations

import asyncio
import logging

from app.api.app_keys import REDIS, RUNTIME
from app.memory import keys
from tests.conftest import AUTH
from tests.fakemodel import Fault, Reply
from tests.pipeline_support import Chat, open_chat
from tests.runtime_support import marker, responders, runtime_app
from tests.waiting import until


async def test_a_model_that_keeps_failing_fails_the_turn_naming_every_message_id(
        fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", Reply("eins", delay=0.4))
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       model_retries=1))
    first = await chat.send("eins")
    await fake_model.wait_requests(1, "responder")
    fake_model.always("responder", Fault.status(500))
    block = [await chat.send("zwei"), await chat.send("drei"), await chat.send("vier")]
    await chat.response(first)
    failed = await chat.failure(block[0])
    await chat.settle()
    assert failed["message_ids"] == block  # every id of the block, in order
    assert failed["reason"] == "model_http_error"
    assert len(responders(fake_model)) == 1 + 2  # one try and one retry for the block
    for message_id in block:
        assert (await chat.get(f"/api/messages/{message_id}"))["state"] == "failed"
    turn = await chat.get(f"/api/turns/{failed['turn_id']}")
    assert turn["state"] == "failed" and turn["reason"] == "model_http_error"
    assert [h["state"] for h in turn["history"]] == ["queued", "path1", "path2", "failed"]
    states = [m["state"] for m in chat.of_type("turn_state") if m["turn_id"] == failed["turn_id"]]
    assert states[-1] == "failed"
    # The pair is free again and nothing is left in its queues.
    redis = chat.app[REDIS]
    assert await marker(chat.app) is None
    for key in (keys.prompt_queue("local", "nova"), keys.event_queue("local", "nova"),
                keys.event_processing("local", "nova")):
        assert await redis.llen(key) == 0
    # The user's words were perceived and kept (path 1 ran); only the answer is missing.
    turns = await chat.session()
    assert [t["rolle"] for t in turns] == ["user", "assistant", "user"]
    fake_model.always("responder", "Wieder da.")
    again = await chat.response(await chat.send("Hallo?"))
    assert again["text"] == "Wieder da."
    await chat.close()


async def test_no_run_slot_in_time_fails_the_turn_with_a_notice(fake_model, make_settings,
                                                                 aiohttp_client, caplog):
    caplog.set_level(logging.WARNING, logger="app.runtime.runtime")
    fake_model.script("responder", Reply("Ich brauche lange.", delay=1.5))
    chat = await open_chat(aiohttp_client, runtime_app(
        fake_model, make_settings, graph_slots=1, lock_wait_timeout=0.2))
    slow = await chat.send("Erzähl mir alles.", character_id="nova")
    await fake_model.wait_requests(1, "responder")  # nova's turn holds the one slot
    waiting = await chat.send("Hallo Luna", character_id="luna")
    failed = await chat.failure(waiting)
    answer = await chat.response(slow)
    await chat.settle()
    assert failed["reason"] == "lock_timeout" and failed["message_ids"] == [waiting]
    assert failed["character_id"] == "luna"
    assert answer["text"] == "Ich brauche lange."
    assert (await chat.get(f"/api/messages/{waiting}"))["state"] == "failed"
    warning = [r for r in caplog.records if r.getMessage() == "no run slot free in time"]
    assert warning and warning[0].fields["setting"] == "lock_wait_timeout"
    assert warning[0].fields["limit"] == 0.2
    assert await marker(chat.app, "luna") is None
    await chat.close()


async def test_a_pair_waiting_for_a_slot_holds_no_marker_and_times_out_naming_every_id(
        fake_model, make_settings, aiohttp_client):
    """Issue 26: the pair's marker is taken when its run can start, not before it waits for
    the slot (a dead process would otherwise hold the markers of every pair waiting in it).
    A block that waited `lock_wait_timeout` in vain fails with `lock_timeout` naming every
    message it holds."""
    fake_model.script("responder", Fault.hang())
    chat = await open_chat(aiohttp_client, runtime_app(
        fake_model, make_settings, graph_slots=1, lock_wait_timeout=1.0))
    slots = chat.app[RUNTIME].slots
    held = await chat.send("Erzähl mir alles.", character_id="nova")
    await fake_model.wait_requests(1, "responder")  # nova's turn holds the one slot
    block = [await chat.send("Hallo Luna", character_id="luna"),
             await chat.send("Bist du da?", character_id="luna")]
    await until(lambda: slots.waiting == 1, what="luna's pair to wait for the slot")
    assert await marker(chat.app, "luna") is None
    assert [(await chat.get(f"/api/messages/{m}"))["state"] for m in block] == [
        "accepted", "accepted"]  # no turn yet: nothing runs for it
    failed = await chat.failure(block[0])
    assert failed["reason"] == "lock_timeout" and failed["message_ids"] == block
    assert await marker(chat.app, "luna") is None
    assert (await chat.get(f"/api/messages/{held}"))["state"] == "path2"
    await chat.close()


async def test_the_run_lock_lets_one_pipeline_run_at_a_time(fake_model, make_settings,
                                                            aiohttp_client):
    fake_model.always("responder", Reply("ok", delay=0.1))
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       model_concurrency=4))
    sent = [await chat.send("a", character_id="nova"), await chat.send("b", character_id="luna")]
    for message_id in sent:
        await chat.response(message_id)
    await chat.settle()
    assert fake_model.max_in_flight == 1  # graph_slots = 1: one GPU, one run
    await chat.close()


async def test_a_reset_fails_the_running_turn_and_drops_its_late_result(
        fake_model, make_settings, aiohttp_client, caplog):
    caplog.set_level(logging.WARNING, logger="app.runtime.runtime")
    fake_model.script("responder", Reply("Zu spät.", delay=0.5), "Neu hier.")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    running = await chat.send("Eins")
    await fake_model.wait_requests(1, "responder")
    queued = [await chat.send("Zwei"), await chat.send("Drei")]
    reset = await chat.client.delete("/api/characters/nova/session", headers=AUTH)
    assert reset.status == 204
    failed_running = await chat.failure(running)
    failed_queued = await chat.failure(queued[0])
    assert failed_running["reason"] == failed_queued["reason"] == "session_reset"
    assert failed_queued["message_ids"] == queued
    # The slow answer comes back after the reset (settle waits for that run to end): logged
    # and dropped, not delivered, not kept.
    await chat.settle()
    assert not [m for m in chat.of_type("character_response") if running in m["message_ids"]]
    assert any(r.getMessage() == "late result for an ended turn dropped" for r in caplog.records)
    assert (await chat.get("/api/characters/nova/session")) == {
        "turns": [], "summary": None,
        "origins": {"antwort": "reply", "fortsetzung": "continue",
                    "eigener_impuls": "own_impulse"}}
    for message_id in (running, *queued):
        assert (await chat.get(f"/api/messages/{message_id}"))["state"] == "failed"
    assert await marker(chat.app) is None
    # The pair works on after the reset.
    fresh = await chat.response(await chat.send("Neu"))
    assert fresh["text"] == "Neu hier."
    turns = await chat.session()
    assert [t["inhalt"] for t in turns] == ["Neu", "Neu hier."]
    await chat.close()


async def test_two_overlapping_resets_both_succeed_and_every_tab_is_told(
        fake_model, make_settings, aiohttp_client):
    # Before: the second reset's clean-up raised KeyError (a 500), and tabs got only the
    # turn_failed notices, never `session_reset` (design §9).
    fake_model.script("responder", Reply("Zu spät.", delay=0.5))
    app = runtime_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    other_tab = await Chat(client=chat.client,
                           ws=await chat.client.ws_connect("/api/ws", headers=AUTH)).start()
    running = await chat.send("Eins")
    await fake_model.wait_requests(1, "responder")

    resets = await asyncio.gather(*(
        chat.client.delete("/api/characters/nova/session", headers=AUTH) for _ in range(2)))

    assert [r.status for r in resets] == [204, 204]
    for tab in (chat, other_tab):
        told = await tab.wait_for(lambda m: m["type"] == "session_reset", count=2)
        assert [m["character_id"] for m in told] == ["nova", "nova"]
        failed = await tab.failure(running)
        assert failed["reason"] == "session_reset"
    await chat.settle()
    assert len([m for m in chat.of_type("turn_failed") if running in m["message_ids"]]) == 1
    await other_tab.close()
    await chat.close()
