"""Events (design §5, seed 001 §3.1–§3.3, §7): producers and payload rules, impulses and the
marker, the self-trigger cap, the parked agent question — through the real server."""

from __future__ import annotations

import asyncio
import logging

import msgspec
import pytest

from app.api.app_keys import REDIS, RUNTIME
from app.core.emotion import Emotion
from app.memory import keys
from app.memory.state import ThoughtArousalError
from app.pipeline.vocabulary import (
    AwaitUser,
    Continue,
    ImpulseWithoutThought,
    Pipelines,
    UserPayload,
)
from app.runtime.events import awaiting_event, continue_event, impulse_event, user_event
from app.runtime.minimal import respond_once, store_user_turn, summarize_after_delivery
from app.runtime.wire import encode
from tests.fakemodel import Reply
from tests.pipeline_support import hold_pair, open_chat
from tests.runtime_support import marker, responders, runtime_app, user_prompt

# --- producers and payload rules (pure) ------------------------------------------------------


def wire(event) -> dict:
    """The event's payload as it is stored: its keys, with the seeds' names."""
    return msgspec.json.decode(encode(event))["payload"]


def test_a_user_event_creates_its_turn_and_carries_the_block():
    event = user_event("u", "nova", "t1", ["m1", "m2"], "a\nb", Emotion(emotion="freude"), "de")
    assert (event.source, event.typ, event.trigger_count) == ("user", "message", 0)
    assert event.payload == UserPayload(emotion="freude", language="de", turn_id="t1",
                                        message_ids=["m1", "m2"], user_prompt="a\nb")
    assert wire(event) == {**msgspec.to_builtins(Emotion(emotion="freude")), "language": "de",
                           "turn_id": "t1", "nachrichten_ids": ["m1", "m2"],
                           "user_prompt": "a\nb"}
    assert event.origin == "reply" and event.turn_id == "t1"


def test_an_impulse_has_no_user_prompt_and_always_its_arousal_and_trigger_fields():
    event = impulse_event("u", "nova", "Der Zahnarzt ist morgen.")
    assert (event.source, event.typ) == ("character", "message")
    payload = wire(event)
    assert "user_prompt" not in payload  # absent, not empty
    assert payload["gedanke_arousal"] is None  # present, even unknown
    assert payload["ausloeser_turn_id"] is None
    assert payload["eigener_gedanke"] == "Der Zahnarzt ist morgen."
    assert payload["reiz_herkunft"] == "eigener_impuls"
    assert event.turn_id and event.origin == "own_impulse"
    with_level = impulse_event("u", "nova", "x", arousal=0.8, trigger_turn_id="t0")
    assert (with_level.payload.thought_arousal, with_level.payload.trigger_turn_id) == (
        0.8, "t0")
    assert with_level.turn_id != event.turn_id  # an impulse creates its turn


@pytest.mark.parametrize("thought", ["", "   ", None])
def test_an_impulse_without_a_thought_fails_loudly(thought):
    with pytest.raises(ImpulseWithoutThought):
        impulse_event("u", "nova", thought)  # type: ignore[arg-type]


@pytest.mark.parametrize("arousal", [True, "0.7", 1.5, -0.1, float("nan")])
def test_an_impulse_arousal_is_rejected_not_clamped(arousal):
    with pytest.raises(ThoughtArousalError):
        impulse_event("u", "nova", "x", arousal=arousal)


def test_a_continue_inherits_the_turn_and_carries_the_thought_arousal():
    parent = impulse_event("u", "nova", "x", arousal=0.9, trigger_turn_id="t0")
    follow = continue_event(parent, Continue(intent="nachfragen"))
    assert (follow.source, follow.typ, follow.trigger_count) == ("character", "continue", 1)
    assert follow.turn_id == parent.turn_id  # inherited, not created
    payload = wire(follow)
    assert payload["gedanke_arousal"] == 0.9
    assert "ausloeser_turn_id" not in payload  # a retry carries no impulse
    assert "eigener_gedanke" not in payload and "retry" not in payload  # unset: not written
    assert payload["absicht"] == "nachfragen" and follow.origin == "continue"
    again = continue_event(follow, Continue())
    assert (again.trigger_count, again.turn_id) == (2, parent.turn_id)
    assert again.payload.thought_arousal == 0.9  # carried on as it was read
    question = awaiting_event(follow, {"agent": "notes", "frage": "Welche Liste?"})
    assert question.typ == "awaiting_user" and wire(question) == {
        "turn_id": parent.turn_id, "pending_agent": {"agent": "notes", "frage": "Welche Liste?"}}
    assert question.message_ids == []


def test_events_keep_the_seed_field_names_on_the_wire():
    event = impulse_event("meister", "nova", "x")
    wire = msgspec.json.decode(msgspec.json.encode(event))
    assert set(wire) == {"event_id", "user_id", "character_id", "source", "typ", "payload",
                         "trigger_count", "erstellt_am"}


# --- impulses and the marker (through the server) ---------------------------------------------


async def test_an_impulse_sets_the_marker_and_a_message_waits_for_it(fake_model, make_settings,
                                                                    aiohttp_client):
    fake_model.script("responder", Reply("Denk an den Zahnarzt!", delay=0.4), "Gern.")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    runtime = chat.app[RUNTIME]
    turn_id = await runtime.submit_impulse("local", "nova", "Zahnarzt morgen um 9", arousal=0.7)
    await fake_model.wait_requests(1, "responder")
    held = await marker(chat.app)
    assert held is not None and held.endswith(f":{turn_id}")
    sent = await chat.send("Danke!")
    state = await chat.get(f"/api/messages/{sent}")
    assert state["state"] == "accepted"  # the impulse's turn holds the pair

    impulse = await chat.response(turn_id=turn_id)
    reply = await chat.response(sent)
    await chat.settle()
    assert (impulse["origin"], impulse["message_ids"]) == ("own_impulse", [])
    assert reply["origin"] == "reply"
    assert user_prompt(responders(fake_model)[0]).startswith("[EIGENER GEDANKE] Zahnarzt")
    assert await marker(chat.app) is None
    turns = await chat.session()
    assert turns[0]["herkunft"] == "eigener_impuls" and turns[0]["rolle"] == "assistant"
    record = await chat.get(f"/api/turns/{turn_id}")
    assert [h["state"] for h in record["history"]] == ["queued", "path2", "delivered"]
    await chat.close()


async def test_marker_and_waiting_event_both_hold_the_prompt_consumer(fake_model, make_settings,
                                                                      aiohttp_client):
    # Turn 1 runs; an impulse arrives (its event waits behind the marker) and so does a new
    # message. When turn 1 ends the marker is free but an event waits: the impulse goes first.
    fake_model.script("responder", Reply("eins", delay=0.4), "impuls", "zwei")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    first = await chat.send("eins")
    await fake_model.wait_requests(1, "responder")
    impulse_turn = await chat.app[RUNTIME].submit_impulse("local", "nova", "Ein Gedanke")
    second = await chat.send("zwei")
    await chat.response(second)
    await chat.settle()
    order = [(m["origin"], m["message_ids"]) for m in chat.of_type("character_response")]
    assert order == [("reply", [first]), ("own_impulse", []), ("reply", [second])]
    assert [user_prompt(r) for r in responders(fake_model)] == [
        "eins", "[EIGENER GEDANKE] Ein Gedanke", "zwei"]
    assert (await chat.get(f"/api/turns/{impulse_turn}"))["state"] == "delivered"
    await chat.close()


async def test_an_impulse_queued_while_a_turn_is_in_path1_waits_behind_that_turn(
        fake_model, make_settings, aiohttp_client):
    # The user turn holds the marker; the impulse's event is queued before the user event
    # (which path 1 emits at its end). The running turn's event must go first, or the two
    # would wait on each other for ever.
    gate, entered = asyncio.Event(), asyncio.Event()

    async def slow_path1(ctx, block):
        entered.set()
        await gate.wait()
        return await store_user_turn(ctx, block)

    fake_model.script("responder", "Antwort.", "Impuls.")
    chat = await open_chat(aiohttp_client, runtime_app(
        fake_model, make_settings, pipelines=Pipelines(path1=slow_path1, path2=respond_once)))
    sent = await chat.send("Hallo")
    await asyncio.wait_for(entered.wait(), 10)
    impulse_turn = await chat.app[RUNTIME].submit_impulse("local", "nova", "Ein Gedanke")
    gate.set()
    reply = await chat.response(sent)
    impulse = await chat.response(turn_id=impulse_turn)
    await chat.settle()
    assert (reply["text"], impulse["text"]) == ("Antwort.", "Impuls.")
    assert [m["turn_id"] for m in chat.of_type("character_response")] == [
        reply["turn_id"], impulse_turn]
    assert await marker(chat.app) is None
    await chat.close()


async def test_an_impulse_for_an_empty_thought_is_refused_and_writes_nothing(
        fake_model, make_settings, aiohttp_client):
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    with pytest.raises(ImpulseWithoutThought):
        await chat.app[RUNTIME].submit_impulse("local", "nova", "  ")
    assert await chat.app[REDIS].llen(keys.event_queue("local", "nova")) == 0
    await chat.close()


@pytest.mark.parametrize("thought", ["", "  ", None])  # None: the key is missing
async def test_a_stored_impulse_without_a_thought_fails_its_turn_with_a_notice(
        thought, fake_model, make_settings, aiohttp_client):
    # A producer refuses such an impulse; one already stored (damaged, or of another make)
    # is a defect too: its turn fails loudly, and no model call answers a thought nobody had.
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    redis, queue = chat.app[REDIS], keys.event_queue("local", "nova")
    held = await hold_pair(chat.app)
    turn_id = await chat.app[RUNTIME].submit_impulse("local", "nova", "Ein Gedanke")
    [raw] = await redis.lrange(queue, 0, -1)
    record = msgspec.json.decode(raw)
    if thought is None:
        del record["payload"]["eigener_gedanke"]
    else:
        record["payload"]["eigener_gedanke"] = thought
    await redis.lset(queue, 0, msgspec.json.encode(record))
    await redis.delete(held)
    chat.app[RUNTIME].notify(keys.pair_id("local", "nova"))

    [failed] = await chat.wait_for(lambda m: m["type"] == "turn_failed")
    await chat.settle()
    assert (failed["turn_id"], failed["reason"]) == (turn_id, "impulse_without_thought")
    assert responders(fake_model) == [] and await marker(chat.app) is None
    assert await redis.llen(keys.event_processing("local", "nova")) == 0


# --- self-trigger -------------------------------------------------------------------------------


def always_continue() -> Pipelines:
    async def path2(ctx, run):
        result = await respond_once(ctx, run)
        return type(result)(text=result.text, origin=result.origin, emotion=result.emotion,
                            arousal=result.arousal,
                            follow_up=Continue(intent="nachfragen"))

    return Pipelines(path1=store_user_turn, path2=path2, after_delivery=summarize_after_delivery)


async def test_the_self_trigger_cap_drops_the_fourth_follow_up_with_a_warning(
        fake_model, make_settings, aiohttp_client, caplog):
    caplog.set_level(logging.INFO, logger="app.runtime.runtime")
    fake_model.default_text = "Noch etwas."
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       pipelines=always_continue()))
    sent = await chat.send("Ich hab heute den Job verloren")
    await chat.response(sent, count=4)
    await chat.settle()
    answers = [m for m in chat.of_type("character_response")]
    assert [a["origin"] for a in answers] == ["reply", "continue", "continue", "continue"]
    assert len({a["turn_id"] for a in answers}) == 1  # continue inherits the turn id
    assert all(a["message_ids"] == [sent] for a in answers)
    assert len(responders(fake_model)) == 4
    dropped = [r for r in caplog.records if r.getMessage() == "self-trigger dropped at the limit"]
    assert len(dropped) == 1 and dropped[0].levelno == logging.WARNING
    assert dropped[0].fields == {"trigger_count": 4, "limit": 3, "pair": "local:nova",
                                 "setting": "max_self_triggers"}
    arrivals = [r.fields for r in caplog.records if r.getMessage() == "self-trigger field"]
    assert [a["present"] for a in arrivals] == [True, True, True, True]
    assert [a["trigger_count"] for a in arrivals] == [0, 1, 2, 3]
    assert await marker(chat.app) is None
    assert await chat.app[REDIS].llen(keys.event_queue("local", "nova")) == 0
    turns = await chat.session()
    assert [t["herkunft"] for t in turns if t["rolle"] == "assistant"] == [
        "antwort", "fortsetzung", "fortsetzung", "fortsetzung"]
    record = await chat.get(f"/api/turns/{answers[0]['turn_id']}")
    assert record["state"] == "delivered"
    await chat.close()


async def test_every_arrival_of_the_self_trigger_field_is_logged_also_when_absent(
        fake_model, make_settings, aiohttp_client, caplog):
    caplog.set_level(logging.INFO, logger="app.runtime.runtime")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    await chat.response(await chat.send("Hallo"))
    await chat.settle()
    arrivals = [r.fields for r in caplog.records if r.getMessage() == "self-trigger field"]
    assert arrivals == [{"pair": "local:nova", "present": False, "value": None,
                         "trigger_count": 0}]
    await chat.close()


# --- awaiting_user ------------------------------------------------------------------------------


async def test_an_agent_question_waits_for_the_next_user_message_and_resumes_with_it(
        fake_model, make_settings, aiohttp_client):
    seen: list[dict | None] = []

    async def path2(ctx, run):
        seen.append(run.pending_agent)
        result = await respond_once(ctx, run)
        if len(seen) == 1:
            return type(result)(text=result.text, origin=result.origin,
                                follow_up=AwaitUser({"agent": "notizen", "item": "Milch"}))
        return result

    fake_model.script("responder", "Welche Liste?", "Milch steht drauf.")
    chat = await open_chat(aiohttp_client, runtime_app(
        fake_model, make_settings, pipelines=Pipelines(path1=store_user_turn, path2=path2)))
    question = await chat.response(await chat.send("Setz Milch auf die Einkaufsliste"))
    await chat.settle()
    redis = chat.app[REDIS]
    # The question is parked: it does not count as a waiting event, the pair is free.
    assert await redis.llen(keys.event_queue("local", "nova")) == 0
    assert await redis.llen(keys.event_awaiting("local", "nova")) == 1
    assert await marker(chat.app) is None

    done = await chat.response(await chat.send("Wocheneinkauf"))
    await chat.settle()
    assert question["text"] == "Welche Liste?" and done["text"] == "Milch steht drauf."
    assert seen == [None, {"agent": "notizen", "item": "Milch"}]
    assert await redis.llen(keys.event_awaiting("local", "nova")) == 0
    assert await redis.llen(keys.event_processing("local", "nova")) == 0
    await chat.close()
