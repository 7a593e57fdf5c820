"""The accept has a Redis connection of its own (issue 26 item 4): it never waits behind the
pair consumers' calls for one of the shared pool's; `ScriptLine` is that connection."""

from __future__ import annotations

import asyncio
import collections
import contextlib

import pytest
import redis.asyncio as aioredis

from app.api.app_keys import PIPELINES, RECORDS, REDIS, SETTINGS
from app.memory import keys
from app.pipeline.vocabulary import Path1Result, Path2Result, Pipelines
from app.runtime.records import ACCEPT
from app.storage.redis_driver import LINE_BATCH, ScriptLine
from tests.conftest import AUTH
from tests.waiting import until

ECHO = "return {KEYS[1], ARGV[1], redis.call('INCR', KEYS[2])}"


async def test_concurrent_calls_each_get_their_own_reply_in_one_connection(redis_client):
    line = ScriptLine(redis_client, ECHO)
    try:
        replies = await asyncio.gather(*(line([f"k{i}", "count"], [i]) for i in range(50)))
        assert [r[:2] for r in replies] == [[f"k{i}", str(i)] for i in range(50)]
        # Every call ran once, each saw its own count.
        assert sorted(r[2] for r in replies) == list(range(1, 51))
    finally:
        await line.aclose()


@pytest.mark.own_redis
async def test_a_flushed_script_cache_and_a_killed_connection_are_recovered(redis_client):
    line = ScriptLine(redis_client, ECHO)
    try:
        assert (await line(["a", "n"], ["1"]))[:2] == ["a", "1"]
        await redis_client.script_flush()  # NOSCRIPT next time: loaded again, call retried
        assert (await line(["b", "n"], ["2"]))[:2] == ["b", "2"]
        await redis_client.client_kill_filter(skipme=True, _type="normal")
        # The batch that meets the dead connection fails; the next one connects anew.
        with contextlib.suppress(aioredis.ConnectionError):
            await line(["c", "n"], ["3"])
        assert (await line(["d", "n"], ["4"]))[:2] == ["d", "4"]
    finally:
        await line.aclose()


async def _hold(ctx, block):  # a turn that never finishes
    await asyncio.Event().wait()
    return Path1Result()


async def _never(ctx, run):  # pragma: no cover - path 1 never ends
    raise AssertionError
    return Path2Result(text="", origin="reply")


@pytest.mark.own_redis
async def test_the_accept_line_is_open_and_its_script_loaded_before_the_first_message(
        app, aiohttp_client):
    """The first message after a start does not pay for the connect and the script's load
    (and every accept arriving behind it wait for that)."""
    await aiohttp_client(app)
    redis = app[REDIS]
    assert await redis.script_exists(redis.register_script(ACCEPT).sha) == [True]
    assert app[RECORDS]._accept._connection.is_connected  # noqa: SLF001


async def test_accept_answers_while_every_pool_connection_is_taken(app, aiohttp_client):
    """The consumers' Redis path is held shut (every connection of the shared pool checked
    out, as a crowd of pair consumers would have them): messages are still accepted, and the
    queued work goes on once the pool frees."""
    app[PIPELINES] = Pipelines(path1=_hold, path2=_never)
    client = await aiohttp_client(app)
    pool = app[REDIS].connection_pool
    held = [await pool.get_connection() for _ in range(app[SETTINGS].redis_max_connections)]
    try:
        async def post(i: int) -> dict:
            response = await client.post("/api/characters/nova/messages",
                                         json={"text": f"Hallo {i}"}, headers=AUTH)
            assert response.status == 202
            return await response.json()

        # Without its own connection the accept would wait for the pool (30 s, then fail).
        bodies = await asyncio.wait_for(asyncio.gather(*(post(i) for i in range(10))), 5)
    finally:
        for connection in held:
            await pool.release(connection)
    texts = [await app[REDIS].hget(keys.message_record(b["message_id"]), "text")
             for b in bodies]
    assert texts == [f"Hallo {i}" for i in range(10)]
    # The pair's consumer ran once the pool was free: every message was taken into a turn.
    async def untaken() -> int:
        return sum([await app[REDIS].hget(keys.message_record(b["message_id"]), "turn_id")
                    is None for b in bodies])

    await until(untaken, lambda n: n == 0)


async def test_a_crowd_of_calls_wakes_at_most_a_batch_of_callers_per_loop_round(redis_client,
                                                                                 monkeypatch):
    """200 calls at once (a burst of accepts): no loop round resumes more than `LINE_BATCH`
    of their callers — all of them at once held the loop for ~50 ms (issue 24 item 18) — and
    each still gets its own reply, in order."""
    loop = asyncio.get_running_loop()
    if not hasattr(loop, "_run_once"):
        pytest.skip("counts the rounds of asyncio's own loop")
    rounds = 0
    run_once = loop._run_once

    def counted() -> None:
        nonlocal rounds
        rounds += 1
        run_once()

    monkeypatch.setattr(loop, "_run_once", counted)
    line = ScriptLine(redis_client, ECHO)
    resumed: list[int] = []  # the loop round each caller resumed in

    async def call(i: int) -> list:
        reply = await line([f"k{i}", "count"], [i])
        resumed.append(rounds)
        return reply

    try:
        replies = await asyncio.gather(*(call(i) for i in range(200)))
    finally:
        await line.aclose()
    assert [r[:2] for r in replies] == [[f"k{i}", str(i)] for i in range(200)]
    assert sorted(r[2] for r in replies) == list(range(1, 201))
    per_round = collections.Counter(resumed)
    assert max(per_round.values()) <= LINE_BATCH
    assert resumed == sorted(resumed)  # the first callers are answered first


async def test_a_failed_batch_fails_its_own_calls_only(redis_client):
    """A reply that is an error (here the script's own) fails that call alone; the calls
    around it, in its batch and the next, get their replies."""
    line = ScriptLine(redis_client, "if ARGV[1] == 'bad' then return redis.error_reply('no')"
                                    " end return ARGV[1]")
    try:
        args = ["bad" if i == 20 else str(i) for i in range(40)]
        replies = await asyncio.gather(*(line(["k"], [a]) for a in args),
                                       return_exceptions=True)
    finally:
        await line.aclose()
    assert isinstance(replies[20], aioredis.ResponseError)
    assert [r for i, r in enumerate(replies) if i != 20] == [str(i) for i in range(40)
                                                             if i != 20]

