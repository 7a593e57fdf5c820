"""The keeper's housekeeping (`app.runtime.keeper`): the heartbeat is written again every
period, a round whose Redis is unreachable is logged and the next period writes it again, and
stop ends every loop and takes the heartbeat away."""

from __future__ import annotations

import asyncio
import logging

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from app.memory import keys
from app.runtime.keeper import Keeper
from app.runtime.markers import PairLocks
from app.runtime.slots import LocalSlots

WAIT = 5.0  # a few heartbeat periods of one second


def keeper_on(redis: aioredis.Redis, make_settings) -> Keeper:
    """A keeper with what it is handed in the app (no external Redis: no listener, no sweep)."""
    settings = make_settings(heartbeat_seconds=1.0, turn_marker_refresh_seconds=1.0)
    return Keeper(redis=redis, settings=settings, instance_id="k1",
                  locks=PairLocks(redis, "k1", settings.turn_marker_ttl),
                  slots=LocalSlots(1, settings.lock_wait_timeout))


async def test_the_heartbeat_is_written_every_period_and_goes_at_stop(redis_client,
                                                                     make_settings):
    keeper = keeper_on(redis_client, make_settings)
    await keeper.start()
    heartbeat = keys.heartbeat("k1")
    try:
        assert 0 < await redis_client.ttl(heartbeat) <= 3  # written at start, three periods
        assert [t.name for t in keeper.tickers] == ["heartbeat", "marker-refresh"]
        await redis_client.delete(heartbeat)
        async with asyncio.timeout(WAIT):
            await keeper.tickers[0].wait_rounds(1)
        assert await redis_client.get(heartbeat) == "alive"
    finally:
        await keeper.stop()
    assert not await redis_client.exists(heartbeat)
    assert [await t.wait_rounds(99) for t in keeper.tickers] == \
        [t.rounds for t in keeper.tickers]  # ended: nobody waits for a round that won't come


async def test_a_round_without_redis_is_logged_and_the_next_one_writes_again(
        redis_client, make_settings, tmp_path, caplog):
    keeper = keeper_on(redis_client, make_settings)
    await keeper.start()
    heartbeat = keys.heartbeat("k1")
    # No server at that socket; no retries, so each round fails at once.
    gone = aioredis.Redis(unix_socket_path=str(tmp_path / "no-redis.sock"),
                          retry=Retry(NoBackoff(), 0))
    try:
        await redis_client.delete(heartbeat)
        keeper.redis = gone  # the Redis is unreachable for a while
        ticker = keeper.tickers[0]
        async with asyncio.timeout(WAIT):
            await ticker.wait_rounds(1)
        assert ticker.failures == 1
        keeper.redis = redis_client
        async with asyncio.timeout(WAIT):
            await ticker.wait_rounds(2)
        assert ticker.failures == 0 and await redis_client.get(heartbeat) == "alive"
    finally:
        await keeper.stop()
        await gone.aclose()
    [failed] = [r for r in caplog.records if r.levelno == logging.ERROR
                and r.getMessage().startswith("background round failed")]
    assert failed.fields["task"] == "heartbeat"  # type: ignore[attr-defined]


async def test_the_death_watch_looks_when_a_heartbeat_can_expire_and_recovers_the_dead(
        redis_client, make_settings):
    """Issue 26: recovery begins when a process's heartbeat expires. The watch sleeps until
    the next listed heartbeat could run out; a listed process without one is unlisted, the
    slots look again, and the orphan sweep runs once for it."""
    settings = make_settings(heartbeat_seconds=5.0)
    sweeps: list[int] = []
    woken: list[int] = []

    class Slots(LocalSlots):
        def wake(self) -> None:
            woken.append(1)

    async def sweep() -> None:
        sweeps.append(1)

    keeper = Keeper(redis=redis_client, settings=settings, instance_id="k1",
                    locks=PairLocks(redis_client, "k1", settings.turn_marker_ttl),
                    slots=Slots(1, 1.0), sweep_orphans=sweep)
    await keeper.beat()
    await redis_client.set(keys.heartbeat("soon"), "alive", px=1500)
    await redis_client.sadd(keys.instances(), "soon", "gone")  # "gone" has no heartbeat
    wait = await keeper.look_for_deaths()
    assert 1.0 < wait <= 1.6  # when "soon"'s heartbeat runs out, not a period later
    assert sweeps == [1] and woken == [1]
    assert await redis_client.smembers(keys.instances()) == {"k1", "soon"}
    await redis_client.delete(keys.heartbeat("soon"))  # expired
    assert await keeper.look_for_deaths() <= 5.0 + 0.1  # nothing listed to expire: a period
    assert sweeps == [1, 1]
    assert await redis_client.smembers(keys.instances()) == {"k1"}
    await keeper.stop()
    assert not await redis_client.sismember(keys.instances(), "k1")


async def test_a_beat_that_finds_its_process_declared_dead_warns_naming_it(
        redis_client, make_settings, caplog):
    """A live process whose heartbeat lapsed (a stalled loop) or that another's death watch
    unlisted says so at its next beat, with its id; a beat that finds its heartbeat in place
    says nothing."""
    keeper = keeper_on(redis_client, make_settings)
    caplog.set_level(logging.WARNING, logger="app.runtime.keeper")

    def warnings() -> list[dict]:
        return [dict(r.fields) for r in caplog.records  # type: ignore[attr-defined]
                if r.getMessage().startswith("this process was declared dead")]

    await keeper.beat()
    await keeper.beat()
    assert warnings() == []
    await redis_client.delete(keys.heartbeat("k1"))
    await keeper.beat()
    await redis_client.srem(keys.instances(), "k1")
    await keeper.beat()
    found = [(w["instance"], w["heartbeat_lapsed"], w["unlisted"]) for w in warnings()]
    assert found == [("k1", True, False), ("k1", False, True)]
    await keeper.stop()
