"""The run slots (`app.runtime.slots`, issue 26 item 4): waiters are served first come first
served in the process and round robin between processes, woken by the release instead of
polling; a slot whose holder's process has no heartbeat is free at once; slots belong to a
model endpoint; `lock_wait_timeout` still ends a wait with `SlotTimeout`."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio as aioredis

from app.memory import keys
from app.runtime.slots import RECHECK_SECONDS, LocalSlots, RedisSlots, SlotTimeout
from tests.waiting import until

ENDPOINT = "http://127.0.0.1:11434"
OTHER = "http://127.0.0.1:8080"


async def alive(redis: aioredis.Redis, *instances: str) -> None:
    """The heartbeats of `instances` (what each process's keeper writes)."""
    for instance in instances:
        await redis.set(keys.heartbeat(instance), "alive", ex=60)


async def script_calls(redis: aioredis.Redis) -> int:
    """How many Lua scripts the server has run (the slot scripts are the only ones here)."""
    stats = await redis.info("commandstats")
    return sum(stats.get(name, {}).get("calls", 0) for name in ("cmdstat_evalsha",
                                                                  "cmdstat_eval"))


class Recorder:
    """Waiters that note when they got the slot and hold it until told."""

    def __init__(self, slots: LocalSlots, endpoint: str | None = ENDPOINT) -> None:
        self.slots = slots
        self.endpoint = endpoint
        self.order: list[str] = []
        self.go: dict[str, asyncio.Event] = {}

    def start(self, name: str, *, hold: bool = True) -> asyncio.Task[None]:
        go = self.go[name] = asyncio.Event()
        if not hold:
            go.set()

        async def run() -> None:
            async with self.slots.hold(self.endpoint):
                self.order.append(name)
                await go.wait()
        return asyncio.create_task(run(), name=name)


@pytest.mark.parametrize("shared", [False, True], ids=["local", "redis"])
async def test_waiters_get_the_slot_in_arrival_order(redis_client, shared):
    await alive(redis_client, "p1")
    slots = (RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="p1") if shared
             else LocalSlots(1, 10.0))
    await slots.start()
    try:
        recorder = Recorder(slots)
        first = recorder.start("w0")
        await until(lambda: recorder.order == ["w0"], what="w0 to hold the slot")
        names = [f"w{i}" for i in range(1, 12)]
        tasks = []
        for name in names:
            tasks.append(recorder.start(name, hold=False))
            await until(lambda n=len(tasks): slots.waiting == n, what="the waiter to queue")
        recorder.go["w0"].set()
        await asyncio.gather(first, *tasks)
        assert recorder.order == ["w0", *names]
        assert slots.in_use == 0
        if shared:
            assert await redis_client.zcard(keys.run_slots(ENDPOINT)) == 0
            assert await redis_client.llen(keys.run_slot_queue(ENDPOINT)) == 0
    finally:
        await slots.stop()


async def test_a_waiter_that_times_out_leaves_the_line_and_the_next_one_is_served():
    slots = LocalSlots(1, 0.2)
    recorder = Recorder(slots)
    holder = recorder.start("holder")
    await until(lambda: recorder.order == ["holder"])
    with pytest.raises(SlotTimeout) as timed_out:
        async with slots.hold(ENDPOINT):
            raise AssertionError("two holders of one slot")
    assert timed_out.value.waited >= 0.2
    late = recorder.start("late", hold=False)
    await until(lambda: slots.waiting == 1)
    recorder.go["holder"].set()
    await asyncio.gather(holder, late)
    assert recorder.order == ["holder", "late"] and slots.in_use == 0


async def test_two_processes_take_turns_and_neither_starves(redis_client):
    """Each of two processes has six runs waiting for the one slot of an endpoint; the slot
    goes back and forth between them."""
    await alive(redis_client, "pa", "pb")
    one = RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="pa")
    two = RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="pb")
    for slots in (one, two):
        await slots.start()
    order: list[str] = []

    async def run(slots: RedisSlots, name: str) -> None:
        async with slots.hold(ENDPOINT):
            order.append(name)

    try:
        gate = asyncio.Event()

        async def first() -> None:
            async with one.hold(ENDPOINT):
                order.append("a-first")
                await gate.wait()

        holder = asyncio.create_task(first())
        await until(lambda: order == ["a-first"])
        tasks = [asyncio.create_task(run(slots, f"{name}{i}"))
                 for i in range(6) for slots, name in ((one, "a"), (two, "b"))]
        await until(lambda: one.waiting == 6 and two.waiting == 6, what="twelve waiters")
        await until(lambda: redis_client.llen(keys.run_slot_queue(ENDPOINT)),
                    lambda n: n == 2, what="one ticket per waiting process")
        gate.set()
        await asyncio.gather(holder, *tasks)
        runs = [name[0] for name in order[1:]]
        # In turn, in the order the processes queued (a's tickets came first here): the
        # process whose run released the slot never takes it again while the other waits.
        assert runs == ["a", "b"] * 6, order
        # In each process its own runs kept their order.
        assert [n for n in order if n[0] == "a"][1:] == [f"a{i}" for i in range(6)]
        assert [n for n in order if n[0] == "b"] == [f"b{i}" for i in range(6)]
    finally:
        for slots in (one, two):
            await slots.stop()


async def test_waiting_runs_are_woken_by_the_release_not_by_polling(redis_client):
    """Fifty runs in two processes wait behind a holder for more than a second: the server
    runs a handful of slot scripts meanwhile (each process's pump asks once, then once per
    `RECHECK_SECONDS`), not one per waiter every 50 ms; and a release reaches the other
    process's first waiter at once."""
    await alive(redis_client, "pa", "pb")
    one = RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="pa")
    two = RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="pb")
    for slots in (one, two):
        await slots.start()
    try:
        recorder_one, recorder_two = Recorder(one), Recorder(two)
        holder = recorder_one.start("holder")
        await until(lambda: recorder_one.order == ["holder"])
        waiters = [recorder_two.start(f"b{i}", hold=False) for i in range(25)]
        waiters += [recorder_one.start(f"a{i}", hold=False) for i in range(25)]
        await until(lambda: one.waiting == 25 and two.waiting == 25)
        before = await script_calls(redis_client)
        await asyncio.sleep(1.5)  # the wait whose Redis traffic is counted
        during = await script_calls(redis_client) - before
        # Two pumps, each at most one look per RECHECK_SECONDS (+1 for the edges).
        assert during <= 2 * (1.5 / RECHECK_SECONDS + 1), during
        released = time.monotonic()
        recorder_one.go["holder"].set()
        await until(lambda: recorder_two.order, what="the other process's first waiter")
        assert time.monotonic() - released < RECHECK_SECONDS  # the notification, not a look
        await asyncio.gather(holder, *waiters)
        assert len(recorder_one.order) + len(recorder_two.order) == 51
    finally:
        for slots in (one, two):
            await slots.stop()


async def test_a_holder_whose_process_lost_its_heartbeat_frees_the_slot(redis_client):
    """The process holding the slot dies (its heartbeat expires; its lease would last 30 s):
    a waiter elsewhere gets the slot at the next look, woken by the keeper's death watch
    (`wake`) at once, by its own look after `RECHECK_SECONDS` at the latest."""
    await alive(redis_client, "dead", "pb")
    dying = RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="dead")
    survivor = RedisSlots(redis_client, 1, 10.0, lease_seconds=30, instance_id="pb")
    await survivor.start()
    try:
        stuck = Recorder(dying)
        holder = stuck.start("holder")
        await until(lambda: stuck.order == ["holder"])
        recorder = Recorder(survivor)
        waiter = recorder.start("after", hold=False)
        await until(lambda: survivor.waiting == 1)
        holder.cancel()  # the process is gone: nothing releases ...
        await redis_client.zadd(keys.run_slots(ENDPOINT), {"dead/x": time.time() + 30})
        await redis_client.delete(keys.heartbeat("dead"))  # ... and its heartbeat expired
        survivor.wake()  # what the death watch does when it sees it
        await asyncio.wait_for(waiter, RECHECK_SECONDS)
        assert recorder.order == ["after"]
        assert await redis_client.zscore(keys.run_slots(ENDPOINT), "dead/x") is None
    finally:
        await survivor.stop()


async def test_slots_belong_to_an_endpoint(redis_client):
    """graph_slots 1 on two model servers: a run on each at once; the offline model's slots
    (no endpoint) are the process's own and never touch Redis."""
    await alive(redis_client, "pa")
    slots = RedisSlots(redis_client, 1, 0.2, lease_seconds=30, instance_id="pa")
    await slots.start()
    try:
        async with slots.hold(ENDPOINT), slots.hold(OTHER), slots.hold(None):
            assert slots.in_use == 3
            assert await redis_client.zcard(keys.run_slots(ENDPOINT)) == 1
            assert await redis_client.zcard(keys.run_slots(OTHER)) == 1
            with pytest.raises(SlotTimeout):
                async with slots.hold(OTHER):
                    raise AssertionError("two holders of one endpoint's slot")
        assert slots.in_use == 0
    finally:
        await slots.stop()


async def test_a_lease_the_keeper_stops_refreshing_runs_out(redis_client):
    await alive(redis_client, "pa", "pb")
    short = RedisSlots(redis_client, 1, 5.0, lease_seconds=0.3, instance_id="pa")
    other = RedisSlots(redis_client, 1, 5.0, lease_seconds=30, instance_id="pb")
    await other.start()
    try:
        async with short.hold(ENDPOINT):
            await short.refresh()  # the keeper's beat keeps it meanwhile
            assert await redis_client.zcard(keys.run_slots(ENDPOINT)) == 1
            # Never refreshed again (a process hung): the lease runs out.
            async with other.hold(ENDPOINT):
                assert await redis_client.zcard(keys.run_slots(ENDPOINT)) == 1
    finally:
        await other.stop()


async def test_a_release_by_a_holder_declared_dead_frees_nobody_elses_slot(redis_client):
    """pa was only slow: its heartbeat lapsed while it held the slot, pb took it as a dead
    holder's. pa's release then takes off nothing of pb's: pb still holds the slot, and a
    third process waits for it."""
    await alive(redis_client, "pa", "pb", "pc")
    key = keys.run_slots(ENDPOINT)
    slow = RedisSlots(redis_client, 1, 5.0, lease_seconds=30, instance_id="pa")
    other = RedisSlots(redis_client, 1, 5.0, lease_seconds=30, instance_id="pb")
    third = RedisSlots(redis_client, 1, 0.3, lease_seconds=30, instance_id="pc")
    try:
        recorder = Recorder(slow)
        run = recorder.start("slow")
        await until(lambda: recorder.order == ["slow"])
        await redis_client.delete(keys.heartbeat("pa"))
        async with other.hold(ENDPOINT):
            [other_holder] = await redis_client.zrange(key, 0, -1)
            recorder.go["slow"].set()  # pa's run ends and releases
            await run
            assert slow.in_use == 0
            assert await redis_client.zrange(key, 0, -1) == [other_holder]
            with pytest.raises(SlotTimeout):
                async with third.hold(ENDPOINT):
                    raise AssertionError("a slot freed by a holder that had lost it")
    finally:
        for slots in (slow, other, third):
            await slots.stop()


async def test_a_holder_declared_dead_while_alive_puts_its_slot_back(redis_client):
    """The same false death; pa's refresh (its next beat) puts its slot back beside the one
    pb took: both runs use the endpoint, so nobody else gets a slot until both released —
    and a slot pa released while the refresh was on its way stays released."""
    await alive(redis_client, "pa", "pb", "pc")
    key = keys.run_slots(ENDPOINT)
    slow_redis = aioredis.Redis(connection_pool=redis_client.connection_pool)
    armed, on_its_way, sent = asyncio.Event(), asyncio.Event(), asyncio.Event()
    zadd = slow_redis.zadd

    async def late_zadd(*args, **kwargs):  # once armed: the refresh's ZADD, held in flight
        if armed.is_set() and not sent.is_set():
            on_its_way.set()
            await sent.wait()
        return await zadd(*args, **kwargs)

    slow_redis.zadd = late_zadd
    slow = RedisSlots(slow_redis, 1, 5.0, lease_seconds=30, instance_id="pa")
    other = RedisSlots(redis_client, 1, 5.0, lease_seconds=30, instance_id="pb")
    third = RedisSlots(redis_client, 1, 0.3, lease_seconds=30, instance_id="pc")
    try:
        async with slow.hold(ENDPOINT):
            [slow_holder] = await redis_client.zrange(key, 0, -1)
            await redis_client.delete(keys.heartbeat("pa"))
            async with other.hold(ENDPOINT):
                await alive(redis_client, "pa")  # its next beat ...
                await slow.refresh()  # ... puts its slot back
                assert slow_holder in await redis_client.zrange(key, 0, -1)
                assert await redis_client.zcard(key) == 2
            with pytest.raises(SlotTimeout):  # pb released; pa's run still holds
                async with third.hold(ENDPOINT):
                    raise AssertionError("a third run beside a put-back slot")
            # A release that lands while the refresh's ZADD is on its way is not undone.
            group = slow.group(ENDPOINT)
            armed.set()
            refresh = asyncio.create_task(slow.refresh())
            await until(lambda: on_its_way.is_set())
        sent.set()  # the ZADD lands after the release's ZREM
        await refresh
        assert await redis_client.zcard(key) == 0
        assert group.held == set()
    finally:
        for slots in (slow, other, third):
            await slots.stop()
