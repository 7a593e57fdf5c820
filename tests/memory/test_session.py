"""SessionMemory against a real embedded Redis: store, TTLs, retrieve, reset, mark_action."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
import redis.asyncio as aioredis

from app.core.settings import Settings, defaults
from app.memory import keys
from app.memory.session import SessionMemory
from app.memory.turns import Turn, encode_turn

U, C = "local", "nova"
TURNS, SUMMARY = keys.session_turns(U, C), keys.session_summary(U, C)


@pytest.fixture
def settings() -> Settings:
    return defaults()


@pytest.fixture
def memory(redis_client: aioredis.Redis, settings: Settings) -> SessionMemory:
    return SessionMemory(redis_client, settings)


def user(turn_id: str, text: str = "hallo", **extra: object) -> Turn:
    return Turn(turn_id, "user", text, 1700000000.0, **extra)  # type: ignore[arg-type]


def reply(turn_id: str, text: str = "hi", origin: str = "antwort") -> Turn:
    return Turn(turn_id, "assistant", text, 1700000001.0,
                occasion=origin)  # type: ignore[arg-type]


async def test_store_appends_in_order_and_retrieve_reads_back(memory: SessionMemory) -> None:
    stored = [user("t1", "eins\nzwei", message_ids=["m1", "m2"]), reply("t1"),
              reply("t2", "von mir aus", origin="eigener_impuls")]
    lengths = [await memory.store(U, C, turn) for turn in stored]
    assert lengths == [1, 2, 3]
    turns, summary = await memory.retrieve(U, C)
    assert turns == stored and summary is None


async def test_the_stored_record_uses_the_seeds_key_and_field_names(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    await memory.store(U, C, user("t1"))
    assert TURNS == "session:local:nova:turns"
    record = json.loads((await redis_client.lrange(TURNS, 0, -1))[0])
    assert record["rolle"] == "user" and record["inhalt"] == "hallo" and "herkunft" in record


async def test_every_write_resets_the_ttl_of_turns_and_summary(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    await redis_client.set(SUMMARY, "früher", ex=5)
    await memory.store(U, C, user("t1"))
    assert 14390 <= await redis_client.ttl(TURNS) <= 14400
    assert 14390 <= await redis_client.ttl(SUMMARY) <= 14400
    await redis_client.expire(TURNS, 7)
    await redis_client.expire(SUMMARY, 7)
    assert await memory.mark_action(U, C, "t1", True)
    assert 14390 <= await redis_client.ttl(TURNS) <= 14400
    assert 14390 <= await redis_client.ttl(SUMMARY) <= 14400


async def test_store_without_a_summary_creates_no_summary_key(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    await memory.store(U, C, user("t1"))
    assert await redis_client.exists(SUMMARY) == 0


async def test_store_is_one_atomic_command(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    await memory.store(U, C, user("t0"))  # loads the script
    await redis_client.config_resetstat()
    await memory.store(U, C, user("t1"))
    stats = await redis_client.info("commandstats")
    calls = {name: value["calls"] for name, value in stats.items()}
    # One EVALSHA: RPUSH and both EXPIREs run inside it, so no reader ever sees the new
    # turn without its TTL reset.
    assert calls.pop("cmdstat_evalsha") == 1
    assert {k: v for k, v in calls.items() if k not in ("cmdstat_config", "cmdstat_info")} == {
        "cmdstat_rpush": 1, "cmdstat_expire": 2}


async def test_a_reader_never_sees_a_fresh_session_without_its_ttl(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    stop = asyncio.Event()
    seen_without_ttl = 0
    observations = 0

    async def observe() -> None:
        nonlocal seen_without_ttl, observations
        while not stop.is_set():
            async with redis_client.pipeline(transaction=True) as pipe:
                pipe.exists(TURNS)
                pipe.ttl(TURNS)
                exists, ttl = await pipe.execute()
            observations += 1
            if exists and ttl == -1:
                seen_without_ttl += 1

    observer = asyncio.create_task(observe())
    try:
        for index in range(150):
            await memory.store(U, C, user(f"t{index}"))
            await redis_client.delete(TURNS)
    finally:
        stop.set()
        await observer
    assert observations > 0 and seen_without_ttl == 0


async def test_concurrent_stores_lose_nothing_and_keep_each_writers_order(
        memory: SessionMemory) -> None:
    async def writer(name: str) -> None:
        for index in range(30):
            await memory.store(U, C, user(f"{name}-{index}"))

    await asyncio.gather(*(writer(name) for name in "abcd"))
    turns, _ = await memory.retrieve(U, C)
    assert len(turns) == 120
    for name in "abcd":
        assert [t.turn_id for t in turns if t.turn_id.startswith(name)] == [
            f"{name}-{index}" for index in range(30)]


async def test_pairs_are_separate(memory: SessionMemory) -> None:
    await memory.store(U, C, user("a"))
    await memory.store(U, "lumi", user("b"))
    await memory.store("other", C, user("c"))
    assert [t.turn_id for t in (await memory.retrieve(U, C))[0]] == ["a"]
    assert [t.turn_id for t in (await memory.retrieve(U, "lumi"))[0]] == ["b"]


async def test_retrieve_reads_old_records_and_leaves_out_only_hopeless_ones(
        memory: SessionMemory, redis_client: aioredis.Redis,
        caplog: pytest.LogCaptureFixture) -> None:
    await redis_client.rpush(TURNS, json.dumps({"rolle": "user", "inhalt": "alt", "zeit": 1}),
                             "kaputt{", encode_turn(reply("t2")))
    await redis_client.set(SUMMARY, "Bisher: Anna, Bonn, 3 Katzen.")
    with caplog.at_level(logging.ERROR):
        turns, summary = await memory.retrieve(U, C)
    assert [t.content for t in turns] == ["alt", "hi"] and turns[0].occasion == ""
    assert summary == "Bisher: Anna, Bonn, 3 Katzen."
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].fields["index"] == 1
    assert errors[0].fields["pair"] == "local:nova"


async def test_reset_clears_turns_summary_queues_and_pending_events_of_the_pair_only(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    await memory.store(U, C, user("t1"))
    await redis_client.set(SUMMARY, "s")
    await redis_client.rpush(keys.prompt_queue(U, C), '{"message_id": "m9"}')
    await redis_client.rpush(keys.event_queue(U, C), '{"typ": "awaiting_user"}')
    await redis_client.rpush(keys.event_processing(U, C), '{"typ": "message"}')
    await redis_client.hset(keys.nova_state(U, C), mapping={"emotion": "freude"})
    await memory.store(U, "lumi", user("other"))

    report = await memory.reset(U, C)

    assert report.prompt_entries == ['{"message_id": "m9"}']
    assert report.event_entries == ['{"typ": "message"}', '{"typ": "awaiting_user"}']
    for key in (TURNS, SUMMARY, keys.prompt_queue(U, C), keys.event_queue(U, C),
                keys.event_processing(U, C)):
        assert await redis_client.exists(key) == 0, key
    assert await redis_client.hget(keys.nova_state(U, C), "emotion") == "freude"
    assert [t.turn_id for t in (await memory.retrieve(U, "lumi"))[0]] == ["other"]
    assert await memory.retrieve(U, C) == ([], None)


async def test_mark_action_marks_the_user_turn_of_that_turn_id(memory: SessionMemory) -> None:
    await memory.store(U, C, user("t1", "Lösch die Einkaufsliste"))
    await memory.store(U, C, reply("t1", "Mach ich."))
    await memory.store(U, C, user("t2", "Trag Milch ein"))
    await memory.store(U, C, reply("t2"))

    assert await memory.mark_action(U, C, "t1", True)
    assert await memory.mark_action(U, C, "t2", False)

    turns, _ = await memory.retrieve(U, C)
    flags = [(t.turn_id, t.role, t.action_done, t.action_succeeded) for t in turns]
    assert flags == [("t1", "user", True, True), ("t1", "assistant", None, None),
                     ("t2", "user", True, False), ("t2", "assistant", None, None)]
    assert [t.content for t in turns] == ["Lösch die Einkaufsliste", "Mach ich.",
                                          "Trag Milch ein", "hi"]


async def test_mark_action_without_a_user_turn_marks_nothing(
        memory: SessionMemory, caplog: pytest.LogCaptureFixture) -> None:
    await memory.store(U, C, reply("impulse-1", "Lust auf einen Spaziergang?", "eigener_impuls"))
    with caplog.at_level(logging.WARNING):
        assert not await memory.mark_action(U, C, "impulse-1", True)
        assert not await memory.mark_action(U, C, "nope", True)
    turns, _ = await memory.retrieve(U, C)
    assert turns[0].action_done is None
    assert sum(r.msg == "mark_action found no user turn" for r in caplog.records) == 2


@pytest.mark.parametrize(("outcome", "expected"), [
    ("completed", (True, True)), ("error", (True, False)),
    ("follow_up", (None, None)), ("refused", (None, None)),
])
async def test_action_outcomes(memory: SessionMemory, outcome: str,
                               expected: tuple[bool | None, bool | None]) -> None:
    await memory.store(U, C, user("t1"))
    marked = await memory.record_action_outcome(U, C, "t1", outcome)  # type: ignore[arg-type]
    assert marked is (expected[0] is not None)
    turn = (await memory.retrieve(U, C))[0][0]
    assert (turn.action_done, turn.action_succeeded) == expected


async def test_mark_action_survives_the_list_shifting_under_it(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    for index in range(40):
        await memory.store(U, C, user(f"t{index}"))

    async def shift() -> None:  # what a summary and new turns do to the indices
        for index in range(40, 60):
            await redis_client.ltrim(TURNS, 1, -1)
            await memory.store(U, C, user(f"t{index}"))
            await asyncio.sleep(0)

    targets = [f"t{index}" for index in range(30, 40)]
    results = await asyncio.gather(shift(), *(memory.mark_action(U, C, t, True) for t in targets))
    assert results[1:] == [True] * len(targets)
    turns, _ = await memory.retrieve(U, C)
    assert [t.turn_id for t in turns] == [f"t{index}" for index in range(20, 60)]
    assert [t.turn_id for t in turns if t.action_done] == targets


async def test_mark_action_is_compare_and_set(
        memory: SessionMemory, redis_client: aioredis.Redis) -> None:
    await memory.store(U, C, user("t1"))
    await memory.store(U, C, user("t2"))
    raws = await redis_client.lrange(TURNS, 0, -1)
    # The script replaces only the exact element that was read, wherever it now is …
    assert await memory._mark(keys=[TURNS, SUMMARY], args=[0, raws[1], "neu", 60]) == 1
    assert await redis_client.lrange(TURNS, 0, -1) == [raws[0], "neu"]
    # … and refuses when it no longer exists (changed or trimmed away meanwhile).
    assert await memory._mark(keys=[TURNS, SUMMARY], args=[1, raws[1], "x", 60]) == 0
    assert await redis_client.lrange(TURNS, 0, -1) == [raws[0], "neu"]
