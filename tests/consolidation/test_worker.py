"""The Pixie worker and consolidation (design §3a; app/consolidation): local support checks,
the offline model's lexicon rules, the reliable queue (taken, acknowledged, put back, retried,
dropped after `pixie_max_attempts`), and the worker's manners (an idle pair only; the run slot
only when nobody waits for it)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from app.memory import keys
from app.memory.long_term import Memory
from app.memory.pixie_queue import PixieQueue, decode_trigger, new_trigger
from app.pipeline.schemas import Consolidation, MemoryChange
from app.consolidation import offline as pixie_offline
from app.consolidation.consolidate import check as check_change
from app.consolidation.worker import PixieWorker
from app.runtime.slots import LocalSlots
from tests.fakemodel import Fault
from tests.pipeline_support import node_context
from tests.waiting import until


def trigger(text: str, **more):
    return new_trigger("u", "nova", turn_id="t1", message_ids=["m1"], text=text,
                       segments=more.pop("segments", []), importance=more.pop("importance", 0.8))


def known(text: str, memory_id: str = "a" * 32) -> Memory:
    return Memory(memory_id=memory_id, user_id="u", character_id="nova", text=text, kind="person",
                  importance=0.8, created_at=1.0, refreshed_at=1.0, last_used_at=None,
                  reflected_at=None, source_message_ids=["m0"], superseded_by=None)


def check(answer, trigger, known, max_chars: int = 1500):
    return check_change(answer, trigger, known, max_chars=max_chars)


def answer(*changes: dict) -> Consolidation:
    return Consolidation(memories=[MemoryChange(**c) for c in changes])


# --- local checks ------------------------------------------------------------------------------

def test_a_memory_in_the_users_words_passes():
    changes, dropped = check(answer({"action": "remember", "text": "Schwester heißt Jana",
                                     "kind": "person"}),
                             trigger("Meine Schwester heißt Jana und wohnt in Leipzig."), [])
    assert [(c.action, c.text, c.kind) for c in changes] == [
        ("remember", "Schwester heißt Jana", "person")] and not dropped


def test_an_unsupported_memory_is_dropped_and_says_which_words():
    changes, dropped = check(answer({"action": "remember", "text": "Die Schwester heißt Anna"}),
                             trigger("Meine Schwester heißt Jana."), [])
    assert changes == [] and dropped[0].missing == ("anna",)


def test_inflection_and_reference_words_do_not_count_as_unsupported():
    changes, dropped = check(answer(
        {"action": "remember", "text": "Die Schwester des Nutzers wohnt in Leipzig"}),
        trigger("Meine Schwestern wohnen alle in Leipziger Vororten"), [])
    assert not dropped and len(changes) == 1


def test_numbers_must_occur_too():
    _, dropped = check(answer({"action": "remember", "text": "Geburtstag am 12. Mai"}),
                       trigger("Mein Geburtstag ist am 21. Mai."), [])
    assert dropped and dropped[0].missing == ("12",)


def test_a_correction_is_grounded_in_the_new_words_and_the_memory_it_corrects():
    old = known("Meine Schwester heißt Jana und wohnt in Leipzig.")
    changes, dropped = check(answer({"action": "supersede", "memory_id": old.memory_id,
                                     "text": "Meine Schwester heißt Jana und wohnt in Dresden."}),
                             trigger("Nicht Leipzig, Dresden!"), [old])
    assert not dropped and changes[0].action == "supersede"
    assert changes[0].memory_id == old.memory_id


def test_a_refresh_of_an_unknown_id_is_judged_as_new_and_kind_is_normalized():
    changes, _ = check(answer({"action": "refresh", "memory_id": "f" * 32,
                               "text": "Ich mag Tee", "kind": "Getränk"},
                              {"action": "none", "text": "Ich mag Tee"}),
                       trigger("Ich mag Tee."), [])
    assert [(c.action, c.memory_id, c.kind) for c in changes] == [("remember", "", "fact")]


# --- offline rules -----------------------------------------------------------------------------

@pytest.mark.parametrize(("said", "kind"), [
    ("Meine Schwester heißt Jana.", "person"),
    ("Sie wohnt in Leipzig.", "person"),
    ("Ich arbeite bei Siemens.", "fact"),
    ("Ich mag Erdbeereis.", "preference"),
    ("Am Freitag ist mein Geburtstag.", "event"),
    ("Ich bin allergisch gegen Nüsse.", "fact"),
    ("Morgen hab ich das Vorstellungsgespräch.", "plan"),
    ("My brother is called Tom.", "person"),
    ("I work at the bakery.", "fact"),
    ("I'm allergic to cats.", "fact"),
])
async def test_the_offline_model_keeps_cue_sentences_in_the_users_words(
        make_settings, redis_client, tmp_path, said, kind):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        from app.consolidation.consolidate import consolidate
        changes = await consolidate(ctx, trigger(f"Hallo du. {said}"), [])
    assert [(c.action, c.text, c.kind) for c in changes] == [("remember", said, kind)]


async def test_the_offline_model_keeps_nothing_from_small_talk(make_settings, redis_client,
                                                               tmp_path):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        from app.consolidation.consolidate import consolidate
        assert await consolidate(ctx, trigger("Na, wie geht's dir so?"), []) == []


def test_offline_salience_promotes_cue_sentences_only():
    from app.llm.offline.handlers import OfflineRequest
    from app.pipeline.prompts import BLOCKS, frame

    def ask(words: str) -> dict:
        content = frame([(BLOCKS["de"].history, f"[1] USER (neutral): {words}")])
        return pixie_offline.salience(OfflineRequest(
            "salience", [{"role": "user", "content": content}], None, 300, 2.0))

    assert ask("Meine Schwester heißt Jana.")["importance"] >= 0.7
    assert ask("Meine Schwester heißt Jana.")["segments"] == ["Meine Schwester heißt Jana."]
    assert ask("Na, alles gut?")["importance"] < 0.7


# --- the worker --------------------------------------------------------------------------------

def worker_for(ctx, redis, slots=None) -> PixieWorker:
    return PixieWorker(redis=redis, settings=ctx.settings, slots=slots or LocalSlots(1, 5.0),
                       long_term=ctx.services.long_term, context_for=lambda *_: ctx)


async def test_a_trigger_is_consolidated_then_acknowledged(make_settings, redis_client, tmp_path):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        queue = PixieQueue(redis_client, "u", "nova")
        await queue.push(trigger("Meine Schwester heißt Jana."))
        worker = worker_for(ctx, redis_client)
        assert await worker.tick() == 1
        assert [m.text for m in await ctx.services.long_term.list("u", "nova")] == [
            "Meine Schwester heißt Jana."]
        assert await redis_client.llen(queue.queue) == 0
        assert await redis_client.llen(queue.processing) == 0
        assert not await redis_client.sismember(keys.pixie_pairs(), "u:nova")


async def test_a_taken_trigger_is_restored_and_consolidated_once(make_settings, redis_client,
                                                                 tmp_path):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        queue = PixieQueue(redis_client, "u", "nova")
        taken = trigger("Ich arbeite bei Siemens.")
        await queue.push(taken)
        raw = await queue.take()  # a worker took it, and the process died
        assert decode_trigger(raw).trigger_id == taken.trigger_id
        assert await queue.restore() == 1
        worker = worker_for(ctx, redis_client)
        assert await worker.tick() == 1
        # Its memories were written, then the process died before the acknowledgement.
        await queue.push(taken)
        assert await worker.tick() == 1
        assert len(await ctx.services.long_term.list("u", "nova")) == 1


async def test_a_busy_pair_is_left_alone(make_settings, redis_client, tmp_path):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        await PixieQueue(redis_client, "u", "nova").push(trigger("Ich mag Tee."))
        worker = worker_for(ctx, redis_client)
        await redis_client.set(keys.turn_marker("u", "nova"), "x:y")
        assert await worker.tick() == 0
        await redis_client.delete(keys.turn_marker("u", "nova"))
        await redis_client.rpush(keys.prompt_queue("u", "nova"), "{}")
        assert await worker.tick() == 0
        await redis_client.delete(keys.prompt_queue("u", "nova"))
        assert await worker.tick() == 1


async def test_model_errors_retry_then_drop_with_a_warning(fake_model, make_settings,
                                                          redis_client, tmp_path, caplog):
    fake_model.always("consolidation", Fault.status(400, "bad request"))
    settings = make_settings(**fake_model.overrides(pixie_max_attempts=2, model_retries=0))
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        queue = PixieQueue(redis_client, "u", "nova")
        await queue.push(trigger("Ich mag Tee."))
        worker = worker_for(ctx, redis_client)
        assert await worker.tick() == 1
        [raw] = await redis_client.lrange(queue.queue, 0, -1)
        assert decode_trigger(raw).attempts == 1
        with caplog.at_level(logging.WARNING):
            assert await worker.tick() == 1
        assert await redis_client.llen(queue.queue) == 0
        assert await redis_client.llen(queue.processing) == 0
        assert any(getattr(r, "fields", {}).get("limit") == "pixie_max_attempts"
                   for r in caplog.records)


async def test_an_unreadable_trigger_is_dropped(make_settings, redis_client, tmp_path, caplog):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        await redis_client.rpush(keys.pixie_queue("u", "nova"), "not json")
        await redis_client.sadd(keys.pixie_pairs(), "u:nova")
        await PixieQueue(redis_client, "u", "nova").push(trigger("Ich mag Tee."))
        assert await worker_for(ctx, redis_client).tick() == 2
        assert "unreadable promotion trigger" in caplog.text
        assert len(await ctx.services.long_term.list("u", "nova")) == 1


async def test_the_worker_takes_the_slot_only_when_nobody_waits():
    """The worker waits behind a turn that waits, and behind one that starts waiting while the
    worker waits already; each step is taken when the slots show the one before it."""
    slots = LocalSlots(1, 5.0)
    order: list[str] = []
    release = asyncio.Event()

    async def turn(name: str) -> None:
        async with slots.hold():
            order.append(name)
            if name == "turn1":
                await release.wait()

    async def pixie() -> None:
        async with slots.hold_when_free():
            order.append("pixie")

    first = asyncio.create_task(turn("turn1"))
    await until(lambda: slots.in_use == 1, what="turn1 to hold the slot")
    waiting = asyncio.create_task(turn("turn2"))
    background = asyncio.create_task(pixie())  # starts in the same step as turn2
    await until(lambda: slots.waiting == 1, what="turn2 to wait")
    late = asyncio.create_task(turn("turn3"))  # the worker is waiting already
    await until(lambda: slots.waiting == 2, what="turn3 to wait")
    assert order == ["turn1"]
    release.set()
    await asyncio.gather(first, waiting, background, late)
    assert order == ["turn1", "turn2", "turn3", "pixie"]


@pytest.mark.parametrize(("a", "b", "same"), [
    ("wohnt", "wohnen", True), ("leipzig", "leipziger", True), ("dresden", "dresdner", True),
    ("schwester", "schweiz", False), ("anna", "anne", False), ("jana", "jan", False),
])
def test_words_match_across_inflection_only(a, b, same):
    from app.memory.words import same_word
    assert same_word(a, b) is same and same_word(b, a) is same


def test_a_memory_too_long_to_ever_be_shown_is_dropped():
    words = "Ich mag " + " ".join(["Tee"] * 40)
    changes, dropped = check(answer({"action": "remember", "text": words}), trigger(words), [],
                             max_chars=100)
    assert changes == [] and dropped[0].reason == "too_long"


@pytest.mark.parametrize(("said", "old", "new"), [
    ("Nein, nicht Leipzig, Dresden!", "Leipzig", "Dresden"),
    ("Sie wohnt nicht in Leipzig, sondern in Dresden.", "Leipzig", "Dresden"),
    ("Not Leipzig but Dresden.", "Leipzig", "Dresden"),
    ("Das ist nicht schlimm, danke.", None, None),
    ("Ich weiß nicht, ob sie kommt.", None, None),
])
def test_offline_corrections_supersede_only_what_was_corrected(said, old, new):
    from app.llm.offline.handlers import OfflineRequest
    from app.pipeline.prompts import BLOCKS, frame
    b = BLOCKS["de"]
    content = frame([(b.said, said),
                     (b.known, f"[{'a' * 32}] (2026-11-30) Meine Schwester wohnt in Leipzig.")])
    answer = pixie_offline.consolidation(OfflineRequest(
        "consolidation", [{"role": "user", "content": content}], None, 400, 2.0))
    supersedes = [m for m in answer["memories"] if m["action"] == "supersede"]
    if old is None:
        assert supersedes == []
    else:
        assert supersedes == [{"action": "supersede", "memory_id": "a" * 32, "kind": "",
                               "text": f"Meine Schwester wohnt in {new}."}]


async def test_recovery_puts_back_only_what_a_dead_process_had_taken(redis_client):
    alive = PixieQueue(redis_client, "u", "nova", owner="alive")
    dead = PixieQueue(redis_client, "u", "nova", owner="dead")
    for text in ("Ich mag Tee.", "Ich mag Kaffee."):
        await alive.push(trigger(text))
    held = await alive.take()
    lost = await dead.take()

    async def owner_dead(owner: str) -> bool:
        return owner == "dead"

    assert await alive.restore(owner_dead) == 1
    assert await redis_client.lrange(alive.queue, 0, -1) == [lost]
    assert await redis_client.lrange(alive.processing, 0, -1) == [held]
    assert await redis_client.hgetall(alive.taken) == {held: "alive"}
    await alive.ack(held)
    assert await redis_client.hgetall(alive.taken) == {}


async def test_a_storage_failure_puts_the_trigger_back_for_another_attempt(
        make_settings, redis_client, tmp_path, caplog):
    settings = make_settings(llm_provider="offline")
    async with node_context(settings, redis_client, tmp_path) as (ctx, _):
        queue = PixieQueue(redis_client, "u", "nova")
        await queue.push(trigger("Ich mag Tee."))
        await ctx.services.db.execute_write_fn(
            lambda conn: conn.execute("DROP TABLE memory_triggers"))
        assert await worker_for(ctx, redis_client).tick() == 1
        [raw] = await redis_client.lrange(queue.queue, 0, -1)
        assert decode_trigger(raw).attempts == 1
        assert await redis_client.llen(queue.processing) == 0
        assert "consolidation failed" in caplog.text
