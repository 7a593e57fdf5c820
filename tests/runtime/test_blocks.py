"""Blocks and the prompt consumer (design §5, seed 001 §3.0), through the real server."""

from __future__ import annotations

from app.api.app_keys import REDIS
from app.memory import keys
from app.runtime.blocks import cut_front_block
from app.runtime.wire import AcceptedMessage
from tests.fakemodel import Reply
from tests.pipeline_support import open_chat
from tests.runtime_support import responders, runtime_app, user_prompt


def _msg(i: int, at: float) -> AcceptedMessage:
    return AcceptedMessage(message_id=f"m{i}", user_id="u", character_id="c", text=f"t{i}",
                           received_at=at)


def test_the_front_block_is_cut_by_the_gap_to_the_immediate_predecessor():
    # Gaps 12 s and 4 s (the seed's example) stay in one block; 31 s starts the next one,
    # even though each message is close to its own predecessor afterwards.
    queued = [_msg(0, 0.0), _msg(1, 12.0), _msg(2, 16.0), _msg(3, 47.0), _msg(4, 48.0)]
    assert [m.message_id for m in cut_front_block(queued, 30.0)] == ["m0", "m1", "m2"]
    assert [m.message_id for m in cut_front_block(queued[3:], 30.0)] == ["m3", "m4"]
    # A chain of small gaps is one block however long it gets.
    chain = [_msg(i, i * 29.0) for i in range(5)]
    assert len(cut_front_block(chain, 30.0)) == 5
    assert cut_front_block([], 30.0) == []
    assert [m.message_id for m in cut_front_block(queued, 0.0)] == ["m0"]


async def test_three_quick_messages_during_a_turn_become_one_block_answered_once(
        fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", Reply("Erste Antwort.", delay=0.5), "Alles auf einmal.")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    first = await chat.send("Hallo")
    await fake_model.wait_requests(1, "responder")  # the first turn is in path 2 now

    later = [await chat.send("Hey"), await chat.send("Achso, ich wollte sagen..."),
             await chat.send("...dass ich morgen nicht kann")]
    # While the turn runs they wait: accepted, no turn yet.
    for message_id in later:
        state = await chat.get(f"/api/messages/{message_id}")
        assert (state["state"], state["turn_id"]) == ("accepted", None)

    one = await chat.response(first)
    assert one["message_ids"] == [first]
    block = await chat.response(later[0])
    await chat.settle()

    assert block["message_ids"] == later  # all three, in order, in one answer
    assert block["text"] == "Alles auf einmal." and block["origin"] == "reply"
    assert len(responders(fake_model)) == 2  # answered once
    assert user_prompt(responders(fake_model)[1]) == (
        "Hey\nAchso, ich wollte sagen...\n...dass ich morgen nicht kann")
    answers = [m for m in chat.of_type("character_response")]
    assert [a["message_ids"] for a in answers] == [[first], later]
    # One user turn for the block, its ids in order; the answer carries the same ids.
    turns = await chat.session()
    assert [(t["rolle"], t["nachrichten_ids"]) for t in turns] == [
        ("user", [first]), ("assistant", [first]), ("user", later), ("assistant", later)]
    assert turns[2]["inhalt"] == "Hey\nAchso, ich wollte sagen...\n...dass ich morgen nicht kann"
    for message_id in later:
        state = await chat.get(f"/api/messages/{message_id}")
        assert state == {"message_id": message_id, "turn_id": block["turn_id"],
                         "state": "delivered"}
    await chat.close()


async def test_only_the_front_block_is_taken_the_rest_waits_for_the_next_round(
        fake_model, make_settings, aiohttp_client):
    # A zero window: every message is its own block (no gap is <= 0 between two stamps).
    fake_model.script("responder", Reply("eins", delay=0.4), "zwei", "drei")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings,
                                                       input_window_seconds=0.0))
    first = await chat.send("eins")
    await fake_model.wait_requests(1, "responder")
    second, third = await chat.send("zwei"), await chat.send("drei")
    answers = [await chat.response(m) for m in (first, second, third)]
    await chat.settle()
    assert [a["message_ids"] for a in answers] == [[first], [second], [third]]
    assert len({a["turn_id"] for a in answers}) == 3
    assert [user_prompt(r) for r in responders(fake_model)] == ["eins", "zwei", "drei"]
    assert await chat.app[REDIS].llen(keys.prompt_queue("local", "nova")) == 0
    await chat.close()


async def test_the_turn_record_names_every_state_with_its_time(fake_model, make_settings,
                                                               aiohttp_client):
    fake_model.script("responder", "Hallo!")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    sent = await chat.send("Hallo")
    answer = await chat.response(sent)
    await chat.settle()
    turn = await chat.get(f"/api/turns/{answer['turn_id']}")
    assert turn["turn_id"] == answer["turn_id"] and turn["state"] == "delivered"
    assert turn["message_ids"] == [sent] and turn["attempts"] == 1
    assert [h["state"] for h in turn["history"]] == ["queued", "path1", "path2", "delivered"]
    times = [h["at"] for h in turn["history"]]
    assert times == sorted(times)
    # Every transition went to the tab as turn_state, in the same order.
    states = [m["state"] for m in chat.of_type("turn_state") if m["turn_id"] == answer["turn_id"]]
    assert states == ["queued", "path1", "path2", "delivered"]
    assert await chat.app[REDIS].ttl(keys.turn_record(answer["turn_id"])) > 6 * 24 * 3600
    await chat.close()
