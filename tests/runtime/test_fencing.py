"""A live process declared dead (its heartbeat lapsed while it ran a turn, as under load with
a short `heartbeat_seconds`): another process recovers the turn while the first still runs
it. Whenever the first one's held run finishes — between the recovery's requeue and its
restore of the pair's events, or while the rerun is in flight — every accepted id ends
exactly once, answered, and nothing stays queued (design §0; the scale-out bench's report)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.test_utils import TestClient, TestServer

from app.api.app_keys import CHARACTERS, KEEPER, PIPELINES, RUNTIME
from app.core import settings as settings_module
from app.memory import keys
from app.pipeline.vocabulary import CharacterRun, PipelineContext, Pipelines
from app.runtime.events import EventQueue
from app.runtime.minimal import respond_once, store_user_turn, summarize_after_delivery
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import Fault, Reply
from tests.pipeline_support import Chat
from tests.runtime_support import CATALOG
from tests.waiting import until

WAIT = 10.0


class HeldRuns:
    """Path 2 of the minimal pipelines, the first `held` runs (in either process) held at a
    gate before their model call, as a model call in flight."""

    def __init__(self, held: int) -> None:
        self.entered = [asyncio.Event() for _ in range(held)]
        self.gates = [asyncio.Event() for _ in range(held)]
        self.ended = [asyncio.Event() for _ in range(held)]
        self.runs = 0
        self.order: list[str] = []  # "enter <run>", "end <run>": what ran when, in both

    async def path2(self, ctx: PipelineContext, run: CharacterRun):
        index, self.runs = self.runs, self.runs + 1
        self.order.append(f"enter {index}")
        try:
            if index >= len(self.gates):
                return await respond_once(ctx, run)
            self.entered[index].set()
            try:
                await self.gates[index].wait()
                return await respond_once(ctx, run)
            finally:
                self.ended[index].set()
        finally:
            self.order.append(f"end {index}")

    def pipelines(self) -> Pipelines:
        return Pipelines(path1=store_user_turn, path2=self.path2,
                         after_delivery=summarize_after_delivery)


def process(fake_model, data_dir, redis_url: str, held: HeldRuns, heartbeat: float):
    settings = settings_module.defaults(data_dir=str(data_dir), redis_url=redis_url,
                                        heartbeat_seconds=heartbeat,
                                        **fake_model.overrides(model_concurrency=4))
    app = create_app(settings, local_token=TOKEN)
    app[PIPELINES] = held.pipelines()
    app[CHARACTERS] = CATALOG
    return app


# The processes get `redis_client`'s socket as their external Redis: a server of its own,
# which the test's processes share and nothing else (tests/conftest.py `SessionRedis`).
@pytest.mark.own_redis
@pytest.mark.parametrize("late", ["before_restore", "during_rerun"])
async def test_a_live_process_declared_dead_loses_no_id_and_fails_none(
        late, fake_model, redis_client, tmp_path, monkeypatch, caplog):
    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    fake_model.always("responder", Reply("Antwort"))
    held = HeldRuns(held=1 if late == "before_restore" else 2)
    # The owner beats rarely: once its heartbeat key is gone it stays "dead" for the test.
    owner = TestClient(TestServer(process(fake_model, tmp_path / "a", redis_url, held, 60.0)))
    watcher = TestClient(TestServer(process(fake_model, tmp_path / "b", redis_url, held, 1.0)))
    await owner.start_server()
    owner_runtime = owner.app[RUNTIME]

    if late == "before_restore":
        # The owner's held run finishes after the recovery requeued its turn and before it
        # puts the pair's taken events back.
        restore = EventQueue.restore

        async def late_restore(queue: EventQueue) -> int:
            if not held.gates[0].is_set():
                held.gates[0].set()
                await held.ended[0].wait()
                await until(lambda: owner_runtime.active_pairs == 0)
            return await restore(queue)

        monkeypatch.setattr(EventQueue, "restore", late_restore)
    try:
        response = await owner.post("/api/characters/luna/messages", json={"text": "Hallo"},
                                    headers=AUTH)
        message_id = (await response.json())["message_id"]
        async with asyncio.timeout(WAIT):
            await held.entered[0].wait()  # the owner runs the turn's path 2
        # The watcher starts only now, so the owner is the one running the turn; its
        # start-up recovery leaves a live process's turn alone.
        await watcher.start_server()
        tab = await Chat(client=watcher,
                         ws=await watcher.ws_connect("/api/ws", headers=AUTH)).start()
        await redis_client.delete(keys.heartbeat(owner_runtime.instance_id))

        if late == "during_rerun":
            async with asyncio.timeout(WAIT):
                await held.entered[1].wait()  # the watcher reruns it; the owner still runs
            held.gates[0].set()
            await held.ended[0].wait()
            await until(lambda: owner_runtime.active_pairs == 0)
            held.gates[1].set()

        await tab.response(message_id)
        await asyncio.gather(owner_runtime.idle(), watcher.app[RUNTIME].idle())
        await tab.settle()
        outcomes = [m for m in tab.seen if m["type"] in ("character_response", "turn_failed")
                    and message_id in m["message_ids"]]
        assert [m["type"] for m in outcomes] == ["character_response"]  # exactly once
        turn = await tab.get(f"/api/turns/{outcomes[0]['turn_id']}")
        assert turn["state"] == "delivered" and turn["attempts"] == 2
        assert not await redis_client.smembers(keys.open_turns())
        for key in (keys.prompt_queue("local", "luna"), keys.event_queue("local", "luna"),
                    keys.event_processing("local", "luna")):
            assert await redis_client.llen(key) == 0
        assert await redis_client.get(keys.turn_marker("local", "luna")) is None
        assert "late result for an ended turn dropped" in caplog.text
        await tab.close()
    finally:
        await owner.close()
        await watcher.close()


# The process gets `redis_client`'s socket as its external Redis (see above).
@pytest.mark.own_redis
async def test_a_periodic_pass_wakes_what_it_took_over_not_pairs_waiting_for_a_slot(
        fake_model, redis_client, tmp_path, aiohttp_client):
    """After a false death every process's pass ran over the cluster's pairs: it woke each
    pair with queued input again, hundreds under load, though each already had a consumer
    waiting for a run slot. A pass wakes the pairs it took over, and waiting ones nobody
    here works on."""
    from app.characters.catalog import Character, CharacterCatalog

    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    fake_model.always("responder", Fault.hang())
    app = process(fake_model, tmp_path / "a", redis_url, HeldRuns(held=0), 1.0)
    app[CHARACTERS] = CharacterCatalog([*CATALOG.all("local"), Character(id="mira", name="Mira")])
    client = await aiohttp_client(app)
    runtime = app[RUNTIME]
    await redis_client.set(keys.turn_marker("local", "luna"), "gone:t0")  # a dead owner's
    for character in ("nova", "mira", "luna"):
        response = await client.post(f"/api/characters/{character}/messages",
                                     json={"text": "Hallo"}, headers=AUTH)
        assert response.status == 202
        if character == "nova":
            await fake_model.wait_requests(1, "responder")  # nova holds the one run slot
    await until(lambda: runtime.consumer.running(keys.pair_id("local", "mira"))
                and not runtime.consumer.running(keys.pair_id("local", "luna")))

    report = await runtime.recover(only_dead_owners=True)
    assert report.cleared_markers == 1 and report.woken_pairs == 1  # luna's, not mira's
    assert runtime.consumer.running(keys.pair_id("local", "luna"))


async def test_a_run_from_before_a_requeue_is_refused_even_where_the_state_matches(
        redis_client):
    """The attempts are the fence: the old run and the rerun both see `path2`, only the
    rerun's delivery lands, and the old run's is a fenced `StateMoved` that changes nothing."""
    from app.runtime.records import StateMoved, Records, TurnRecord

    records = Records(redis_client, 60, "old")
    rerun_records = Records(redis_client, 60, "new")
    old = TurnRecord(turn_id="fence-t1", user_id="local", character_id="nova",
                     initiator="user", message_ids=["m1"])
    await records.create(old)
    old_machine = old.machine(3)
    await records.transition(old, old_machine, "perceive")
    await records.transition(old, old_machine, "respond")
    stored = await rerun_records.turn("fence-t1")
    await rerun_records.transition(stored, stored.machine(3), "requeue")
    rerun = await rerun_records.turn("fence-t1")
    rerun_machine = rerun.machine(3)
    await rerun_records.transition(rerun, rerun_machine, "respond")
    assert (rerun.state, rerun.attempts) == ("path2", 2)

    with pytest.raises(StateMoved) as refused:
        await records.transition(old, old_machine, "deliver")
    assert refused.value.fenced and old.state == "path2" and old.attempts == 1
    with pytest.raises(StateMoved):
        await records.transition(old, old_machine, "fail", reason="turn_ended")
    assert (await records.turn("fence-t1")).state == "path2"
    await rerun_records.transition(rerun, rerun_machine, "deliver")
    assert (await records.turn("fence-t1")).state == "delivered"


# The processes get `redis_client`'s socket as their external Redis (see above).
@pytest.mark.own_redis
async def test_a_process_declared_dead_puts_back_the_slot_its_run_still_uses(
        fake_model, redis_client, tmp_path, caplog):
    """graph_slots 1. The owner's run is in its model call when its heartbeat lapses; the
    watcher drops the owner's slot as a dead holder's and reruns the turn on it — two runs
    at once on the endpoint, the over-commit a false death leaves. The owner's next beat
    puts its slot back, so once the rerun has ended no other run starts while the owner's
    still uses the endpoint, and the owner's release then frees it."""
    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    fake_model.always("responder", Reply("Antwort"))
    held = HeldRuns(held=2)
    owner = TestClient(TestServer(process(fake_model, tmp_path / "a", redis_url, held, 60.0)))
    watcher = TestClient(TestServer(process(fake_model, tmp_path / "b", redis_url, held, 1.0)))
    slots_key = keys.run_slots(fake_model.url)
    await owner.start_server()
    owner_runtime = owner.app[RUNTIME]
    try:
        response = await owner.post("/api/characters/luna/messages", json={"text": "Hallo"},
                                    headers=AUTH)
        first = (await response.json())["message_id"]
        async with asyncio.timeout(WAIT):
            await held.entered[0].wait()
        [owner_slot] = await redis_client.zrange(slots_key, 0, -1)
        await watcher.start_server()
        tab = await Chat(client=watcher,
                         ws=await watcher.ws_connect("/api/ws", headers=AUTH)).start()
        await redis_client.delete(keys.heartbeat(owner_runtime.instance_id))
        async with asyncio.timeout(WAIT):
            await held.entered[1].wait()  # the rerun, on the slot dropped as the owner's
        assert owner_slot not in await redis_client.zrange(slots_key, 0, -1)

        await owner.app[KEEPER].beat()  # finds itself declared dead
        assert owner_slot in await redis_client.zrange(slots_key, 0, -1)
        assert await redis_client.zcard(slots_key) == 2  # both runs count
        assert "run slots put back" in caplog.text

        held.gates[1].set()
        await tab.response(first)  # the rerun answered and gave its slot back
        second = await tab.send("Und du?", character_id="nova")
        # Nova's run asked for the slot and was refused (a refused process queues its
        # ticket): the owner's run still holds it.
        await until(lambda: redis_client.llen(keys.run_slot_queue(fake_model.url)),
                    what="nova's run refused a slot")
        assert held.runs == 2
        held.gates[0].set()
        await tab.response(second)
        await asyncio.gather(owner_runtime.idle(), watcher.app[RUNTIME].idle())
        assert held.order.index("end 0") < held.order.index("enter 2")
        assert await redis_client.zcard(slots_key) == 0
        await tab.close()
    finally:
        await owner.close()
        await watcher.close()


# The processes get `redis_client`'s socket as their external Redis (see above).
@pytest.mark.own_redis
@pytest.mark.parametrize("rerun_owner", ["alive", "crashed"])
async def test_a_turn_declared_dead_twice_is_answered_by_a_live_owner(
        rerun_owner, fake_model, redis_client, tmp_path, caplog):
    """max_turn_attempts 2. The owner is declared dead in its run: the watcher reruns the
    turn (attempt 2). Then the watcher is declared dead in the rerun: the turn is out of
    attempts, but the watcher's marker still holds, so the owner's pass leaves the turn to
    it, and the rerun answers it. Had the watcher crashed, its marker runs out (here: is
    gone) and the pass fails the turn `crashed` — the attempt cap still ends it."""
    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    fake_model.always("responder", Reply("Antwort"))
    held = HeldRuns(held=2)
    # Both beat rarely: a deleted heartbeat stays gone; the passes are run by hand.
    owner = TestClient(TestServer(process(fake_model, tmp_path / "a", redis_url, held, 60.0)))
    watcher = TestClient(TestServer(process(fake_model, tmp_path / "b", redis_url, held, 60.0)))
    await owner.start_server()
    owner_runtime = owner.app[RUNTIME]
    try:
        tab = await Chat(client=owner, ws=await owner.ws_connect("/api/ws", headers=AUTH)).start()
        message_id = await tab.send("Hallo", character_id="luna")
        async with asyncio.timeout(WAIT):
            await held.entered[0].wait()
        await watcher.start_server()
        watcher_runtime = watcher.app[RUNTIME]
        await redis_client.delete(keys.heartbeat(owner_runtime.instance_id))
        first = await watcher_runtime.recover(only_dead_owners=True)
        assert len(first.requeued) == 1
        async with asyncio.timeout(WAIT):
            await held.entered[1].wait()  # the rerun, attempt 2, in the watcher
        held.gates[0].set()  # the owner's fenced run ends and is dropped
        await until(lambda: owner_runtime.active_pairs == 0)
        await owner.app[KEEPER].beat()  # the owner is back

        await redis_client.delete(keys.heartbeat(watcher_runtime.instance_id))
        if rerun_owner == "crashed":
            await redis_client.delete(keys.turn_marker("local", "luna"))  # its TTL ran out
        second = await owner_runtime.recover(only_dead_owners=True)
        held.gates[1].set()
        await asyncio.gather(owner_runtime.idle(), watcher_runtime.idle())
        await tab.settle()
        outcomes = [m for m in tab.seen if m["type"] in ("character_response", "turn_failed")
                    and message_id in m["message_ids"]]
        turn = await tab.get(f"/api/turns/{outcomes[0]['turn_id']}")
        assert turn["attempts"] == 2 and second.requeued == []
        if rerun_owner == "alive":
            assert second.left_to_owner == [turn["turn_id"]] and second.failed == []
            assert [m["type"] for m in outcomes] == ["character_response"]
            assert turn["state"] == "delivered"
            assert "turn out of attempts left to its owner" in caplog.text
        else:
            assert second.left_to_owner == [] and second.failed == [turn["turn_id"]]
            assert [(m["type"], m.get("reason")) for m in outcomes] == [
                ("turn_failed", "crashed")]
            assert turn["state"] == "failed"
        assert not await redis_client.smembers(keys.open_turns())
        for key in (keys.prompt_queue("local", "luna"), keys.event_queue("local", "luna"),
                    keys.event_processing("local", "luna")):
            assert await redis_client.llen(key) == 0
        assert await redis_client.get(keys.turn_marker("local", "luna")) is None
        await tab.close()
    finally:
        await owner.close()
        await watcher.close()
