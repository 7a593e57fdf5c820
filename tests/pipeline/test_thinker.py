"""The thinker: one regeneration when an answer misses the request; a second miss delivers
the answer and asks for a `continue` retry that inherits the turn id (seed 001 §3.1.1)."""

from __future__ import annotations

import msgspec

from app.api.app_keys import DB
from app.memory.message_log import MessageLog
from app.runtime.wire import encode
from tests.pipeline_support import fake_app, last_user_message, open_chat, purposes

MISS = {"misses_request": True, "reason": "Die Frage nach der Uhrzeit fehlt."}


async def test_one_miss_is_regenerated_within_the_run(fake_model, make_settings,
                                                      aiohttp_client):
    fake_model.script("responder", "Schönes Wetter heute!", "Es ist zehn Uhr.")
    fake_model.script("thinker", MISS, {})
    chat = await open_chat(aiohttp_client, fake_app(fake_model, make_settings))

    sent = await chat.send("Wie spät ist es?")
    answer = await chat.response(sent)
    await chat.settle()

    assert answer["text"] == "Es ist zehn Uhr."
    assert purposes(fake_model).count("responder") == 2
    regenerate = last_user_message(fake_model.chats("responder")[1])
    assert "Die Frage nach der Uhrzeit fehlt." in regenerate
    responses = [m for m in chat.of_type("character_response") if sent in m["message_ids"]]
    assert len(responses) == 1  # no retry run
    assert [t["inhalt"] for t in await chat.session()][1:] == ["Es ist zehn Uhr."]


async def test_a_second_miss_delivers_and_retries_under_the_same_turn_id(
        fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", "Schönes Wetter heute!", "Der Himmel ist blau.",
                      "Entschuldige: Es ist zehn Uhr.")
    fake_model.script("thinker", MISS, MISS, {})
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)

    sent = await chat.send("Wie spät ist es?")
    first = await chat.response(sent)
    retry = await chat.response(sent, origin="continue")
    await chat.settle()

    assert first["text"] == "Der Himmel ist blau." and first["origin"] == "reply"
    assert retry["text"] == "Entschuldige: Es ist zehn Uhr."
    assert retry["turn_id"] == first["turn_id"] and retry["message_ids"] == [sent]
    # The retry run repeats the real request, tells the responder what was missing, and
    # asks no agent (a retry must not repeat an action).
    assert purposes(fake_model).count("router") == 1
    retried = last_user_message(fake_model.chats("responder")[2])
    assert "### Dein letzter Versuch war nicht genug\nDie Frage nach der Uhrzeit fehlt." \
        in retried
    assert "[1] NOVA (neutral): Der Himmel ist blau." in retried
    turns = await chat.session()
    assert [(t["rolle"], t["herkunft"], t["turn_id"]) for t in turns] == [
        ("user", "", first["turn_id"]), ("assistant", "antwort", first["turn_id"]),
        ("assistant", "fortsetzung", first["turn_id"])]
    rows = await MessageLog(app[DB]).for_user("local")
    assert [(r.role, r.occasion, r.turn_id) for r in rows] == [
        ("user", "", first["turn_id"]), ("assistant", "antwort", first["turn_id"]),
        ("assistant", "fortsetzung", first["turn_id"])]
    history = await chat.get(f"/api/turns/{first['turn_id']}")
    assert history["state"] == "delivered"


async def test_the_retry_of_an_impulse_carries_its_level_but_no_impulse_fields(
        fake_model, make_settings, aiohttp_client):
    from app.api.app_keys import PIPELINE_HOST, PIPELINES, RUNTIME
    from app.pipeline.vocabulary import Pipelines
    app = fake_app(fake_model, make_settings)
    events = []

    # The product's pipelines exist once the app has started; these reach them per call.
    async def path1(ctx, block):
        return await app[PIPELINE_HOST].path1(ctx, block)

    async def observed_path2(ctx, run):  # sees each event, then runs the real path 2
        events.append(run.event)
        return await app[PIPELINE_HOST].path2(ctx, run)

    async def after_delivery(ctx, run, result):
        await app[PIPELINE_HOST].after_delivery(ctx, run, result)

    app[PIPELINES] = Pipelines(path1=path1, path2=observed_path2, after_delivery=after_delivery)
    fake_model.script("thinker", MISS, MISS, {})
    chat = await open_chat(aiohttp_client, app)

    turn_id = await app[RUNTIME].submit_impulse("local", "nova", "Ich denke an den Garten.",
                                                arousal=0.8, trigger_turn_id="t-earlier")
    await chat.response(turn_id=turn_id, origin="continue")
    await chat.settle()

    impulse, retry = events
    assert impulse.payload.thought == "Ich denke an den Garten."
    assert impulse.payload.trigger_turn_id == "t-earlier"
    assert (retry.typ, retry.source, retry.trigger_count) == ("continue", "character", 1)
    stored = msgspec.json.decode(encode(retry))["payload"]  # the keys as the queue held them
    assert stored["turn_id"] == turn_id  # inherited, not new
    assert stored["retry"] == "thinker"
    assert stored["grund"] == "Die Frage nach der Uhrzeit fehlt."
    assert stored["gedanke_arousal"] == 0.8  # the level travels with the retry
    for absent in ("eigener_gedanke", "reiz_herkunft", "ausloeser_turn_id", "user_prompt"):
        assert absent not in stored
