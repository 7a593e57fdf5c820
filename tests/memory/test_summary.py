"""The session summary through the real model gateway: a fake model server, and offline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from app.core.settings import Settings
from app.llm import Gateway
from app.memory import keys
from app.memory.session import SessionMemory
from app.memory.turns import Turn
from tests.fakemodel import FakeModel, Fault, Reply

U, C = "local", "nova"
TURNS, SUMMARY = keys.session_turns(U, C), keys.session_summary(U, C)
SUMMARY_TEXT = "Anna (34) wohnt in Bonn. NOVA schlug von sich aus eine Fahrt nach Köln um 9 Uhr vor."


def conversation(count: int, start: int = 0) -> list[Turn]:
    """User turns and replies; turn 3 is an own impulse, turn 5 of unknown occasion."""
    turns = []
    for index in range(start, start + count):
        if index == 3:
            turns.append(Turn(f"t{index}", "assistant", "Wollen wir morgen um 9 Uhr nach Köln?",
                              float(index), occasion="eigener_impuls"))
        elif index == 5:
            turns.append(Turn(f"t{index}", "assistant", "Alte Zeile ohne Anlass.", float(index)))
        elif index % 2 == 0:
            turns.append(Turn(f"t{index}", "user", f"Ich bin Anna, 34, aus Bonn. Satz {index}.",
                              float(index), emotion="neutral"))
        else:
            turns.append(Turn(f"t{index}", "assistant", f"Schön, Anna! Antwort {index}.",
                              float(index), occasion="antwort"))
    return turns


@pytest.fixture
def fake_settings(make_settings: Callable[..., Settings], fake_model: FakeModel) -> Settings:
    return make_settings(**fake_model.overrides())


@pytest.fixture
async def gateway(fake_settings: Settings) -> AsyncIterator[Gateway]:
    async with Gateway(fake_settings) as started:
        yield started


@pytest.fixture
def memory(redis_client: aioredis.Redis, fake_settings: Settings) -> SessionMemory:
    return SessionMemory(redis_client, fake_settings)


async def fill(memory: SessionMemory, turns: list[Turn]) -> None:
    for turn in turns:
        await memory.store(U, C, turn)


async def ids(memory: SessionMemory) -> list[str]:
    return [turn.turn_id for turn in (await memory.retrieve(U, C))[0]]


async def test_at_or_below_the_threshold_nothing_happens(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel) -> None:
    await fill(memory, conversation(25))
    assert not await memory.summarize_if_needed(U, C, gateway)
    assert fake_model.chats() == [] and len(await ids(memory)) == 25


async def test_above_the_threshold_the_oldest_ten_are_folded_into_the_summary(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis) -> None:
    await fill(memory, conversation(26))
    await redis_client.set(SUMMARY, "Bisher: Anna hat zwei Katzen, Minka und Rudi.")
    fake_model.script("summary", SUMMARY_TEXT)

    assert await memory.summarize_if_needed(U, C, gateway, character_name="Nova")

    assert await ids(memory) == [f"t{i}" for i in range(10, 26)]
    assert await redis_client.get(SUMMARY) == SUMMARY_TEXT
    assert 14390 <= await redis_client.ttl(SUMMARY) <= 14400
    assert 14390 <= await redis_client.ttl(TURNS) <= 14400
    [request] = fake_model.chats("summary")
    assert request.body["max_tokens"] == 600
    system, user = request.messages
    assert "name, fact, place" in system["content"] and "NOVA (von sich aus)" in system["content"]
    # The previous summary and exactly the oldest ten turns, whole, through the one renderer.
    assert "Bisher: Anna hat zwei Katzen, Minka und Rudi." in user["content"]
    assert "[3] NOVA (von sich aus): Wollen wir morgen um 9 Uhr nach Köln?" in user["content"]
    assert "NOVA (Anlass unbekannt): Alte Zeile ohne Anlass." in user["content"]
    assert "Satz 8." in user["content"] and "Antwort 9." in user["content"]
    assert "Satz 10." not in user["content"]


async def test_model_failure_trims_to_twenty_and_keeps_the_old_summary(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    await fill(memory, conversation(27))
    await redis_client.set(SUMMARY, "alt")
    fake_model.always("summary", Fault.status(500))

    with caplog.at_level(logging.WARNING):
        assert not await memory.summarize_if_needed(U, C, gateway)

    assert await ids(memory) == [f"t{i}" for i in range(7, 27)]
    assert await redis_client.get(SUMMARY) == "alt"
    assert 14390 <= await redis_client.ttl(TURNS) <= 14400
    assert 14390 <= await redis_client.ttl(SUMMARY) <= 14400
    assert len(fake_model.chats("summary")) == 3  # the call and its two retries
    warning = next(r for r in caplog.records if r.msg.startswith("session summary failed"))
    assert warning.fields["limit"] == "session_max_turns" and warning.fields["removed"] == 7
    assert warning.fields["code"] == "model_http_error"
    assert await redis_client.exists(keys.session_summary_lock(U, C)) == 0


async def test_an_empty_summary_counts_as_a_failure(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis) -> None:
    await fill(memory, conversation(30))
    fake_model.script("summary", "   ")
    assert not await memory.summarize_if_needed(U, C, gateway)
    assert await ids(memory) == [f"t{i}" for i in range(10, 30)]
    assert await redis_client.exists(SUMMARY) == 0


async def test_a_store_racing_the_summary_is_neither_lost_nor_reordered(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis) -> None:
    await fill(memory, conversation(26))
    fake_model.script("summary", Reply(SUMMARY_TEXT, delay=1.0))

    summary = asyncio.create_task(memory.summarize_if_needed(U, C, gateway))
    await fake_model.wait_requests(1)
    await fill(memory, conversation(5, start=26))
    assert not summary.done()  # the stores really happened while the model was answering
    assert await summary

    assert await ids(memory) == [f"t{i}" for i in range(10, 31)]
    assert await redis_client.get(SUMMARY) == SUMMARY_TEXT


async def test_a_reset_during_the_summary_is_not_undone(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    await fill(memory, conversation(26))
    fake_model.script("summary", Reply(SUMMARY_TEXT, delay=1.0))

    summary = asyncio.create_task(memory.summarize_if_needed(U, C, gateway))
    await fake_model.wait_requests(1)
    await memory.reset(U, C)
    await fill(memory, conversation(12, start=100))
    with caplog.at_level(logging.WARNING):
        assert not await summary

    assert await ids(memory) == [f"t{i}" for i in range(100, 112)]
    assert await redis_client.exists(SUMMARY) == 0
    assert any("summary discarded" in r.msg for r in caplog.records)


async def test_a_mark_on_a_folded_turn_during_the_summary_discards_it(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis) -> None:
    await fill(memory, conversation(26))
    fake_model.script("summary", Reply(SUMMARY_TEXT, delay=1.0))

    summary = asyncio.create_task(memory.summarize_if_needed(U, C, gateway))
    await fake_model.wait_requests(1)
    assert await memory.mark_action(U, C, "t2", True)
    # The summary was written from the unmarked turn: it is not stored, nothing is removed,
    # and the next check summarizes the marked version.
    assert not await summary
    turns, stored_summary = await memory.retrieve(U, C)
    assert [t.turn_id for t in turns] == [f"t{i}" for i in range(26)] and stored_summary is None
    assert turns[2].action_done is True
    fake_model.script("summary", SUMMARY_TEXT)
    assert await memory.summarize_if_needed(U, C, gateway)
    assert "[2] USER (neutral, ERLEDIGT): Ich bin Anna" in \
        fake_model.chats("summary")[-1].messages[1]["content"]


async def test_one_summary_at_a_time_per_pair(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis) -> None:
    await fill(memory, conversation(26))
    fake_model.script("summary", Reply(SUMMARY_TEXT, delay=0.5))
    await memory.store(U, "lumi", conversation(1)[0])

    results = await asyncio.gather(*(memory.summarize_if_needed(U, C, gateway) for _ in range(4)))

    assert sorted(results) == [False, False, False, True]
    assert len(fake_model.chats("summary")) == 1
    assert await ids(memory) == [f"t{i}" for i in range(10, 26)]
    assert await redis_client.exists(keys.session_summary_lock(U, C)) == 0


async def test_a_lock_held_elsewhere_makes_the_call_return_at_once(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        redis_client: aioredis.Redis) -> None:
    await fill(memory, conversation(26))
    await redis_client.set(keys.session_summary_lock(U, C), "other-process", ex=60)
    assert not await memory.summarize_if_needed(U, C, gateway)
    assert fake_model.chats() == []
    assert await redis_client.get(keys.session_summary_lock(U, C)) == "other-process"


async def test_the_prompt_template_can_be_replaced_from_the_data_dir(
        memory: SessionMemory, gateway: Gateway, fake_model: FakeModel,
        fake_settings: Settings) -> None:
    prompts = fake_settings.data_path / "prompts"
    prompts.mkdir()
    (prompts / "summary.txt").write_text("Fasse zusammen, {name}. Impulse: {impulse_label}.")
    await fill(memory, conversation(26))
    fake_model.script("summary", SUMMARY_TEXT)
    assert await memory.summarize_if_needed(U, C, gateway, character_name="Lumi")
    assert fake_model.chats("summary")[0].messages[0]["content"] == \
        "Fasse zusammen, LUMI. Impulse: LUMI (von sich aus)."


async def test_the_summary_runs_against_the_offline_provider(
        redis_client: aioredis.Redis, settings: Settings) -> None:
    memory = SessionMemory(redis_client, settings)
    await fill(memory, conversation(26))
    await redis_client.set(SUMMARY, "Bisher: Anna hat zwei Katzen, Minka und Rudi.")
    async with Gateway(settings) as offline:
        assert offline.info().provider == "offline"
        assert await memory.summarize_if_needed(U, C, offline)
    summary: Any = await redis_client.get(SUMMARY)
    assert await ids(memory) == [f"t{i}" for i in range(10, 26)]
    # Names, places and numbers survive; the impulse stays named as the character's own.
    for kept in ("Minka", "Anna", "Bonn", "34", "Köln", "9 Uhr", "von sich aus"):
        assert kept in summary, kept
    assert not summary.lstrip().startswith("{")  # plain text, not a JSON envelope
