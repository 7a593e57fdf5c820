"""A live process declared dead after its run committed the answer (issue 26): the fenced
late run and the rerun elsewhere both come to the message-log append of the same answer.
The rerun finds the answer stored and stores nothing again; the row is promised once
(`LogOutbox`, idempotent by `entry_key`). Whichever appends first, the session holds the
turn's answer once, and the store holds its row once — on PostgreSQL the one store both
processes share. On SQLite each process has a store of its own (a data dir each: the two
files are no shared log), and neither holds the row twice."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter

import pytest
from aiohttp.test_utils import TestClient, TestServer

from app.api.app_keys import DB, RUNTIME
from app.core import settings as settings_module
from app.memory import keys
from app.memory.message_log import MessageLog
from app.pipeline import dispatcher
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import Reply
from tests.pipeline_support import Chat

WAIT = 10.0


class HeldAppend:
    """The first answer's row append (`dispatcher._deliver` at `answer:appended`, in either
    process: the owner's run comes first), held before or after it appends."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, appended: bool) -> None:
        self.appended = appended
        self.reached = asyncio.Event()
        self.gate = asyncio.Event()
        self.calls = 0
        deliver = dispatcher._deliver

        async def held(ctx, user_id, character_id, row, crash_at):
            first = crash_at == "answer:appended" and self.calls == 0
            self.calls += crash_at == "answer:appended"
            if first and not self.appended:
                await self.hold()
            await deliver(ctx, user_id, character_id, row, crash_at)
            if first and self.appended:
                await self.hold()

        monkeypatch.setattr(dispatcher, "_deliver", held)

    async def hold(self) -> None:
        self.reached.set()
        await self.gate.wait()


def process(fake_model, data_dir, redis_url: str, database_url: str | None,
            files_dir: str | None):
    settings = settings_module.defaults(
        data_dir=str(data_dir), redis_url=redis_url, database_url=database_url,
        files_dir=files_dir, heartbeat_seconds=60.0,  # a deleted heartbeat stays gone
        **fake_model.overrides(model_concurrency=4))
    return create_app(settings, local_token=TOKEN)


# The processes get `redis_client`'s socket as their external Redis: a server of its own,
# which the test's processes share and nothing else (tests/conftest.py `SessionRedis`).
@pytest.mark.own_redis
@pytest.mark.parametrize("first", ["rerun_appends_first", "late_run_appends_first"])
async def test_the_late_run_and_the_rerun_leave_one_answer_and_one_row(
        first, fake_model, database_url, redis_client, tmp_path, monkeypatch, caplog):
    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    files_dir = str(tmp_path / "files") if database_url else None  # one install's files
    fake_model.always("responder", Reply("Schön, dass du schreibst."))
    caplog.set_level(logging.INFO, logger="app.pipeline.dispatcher")
    held = HeldAppend(monkeypatch, appended=first == "late_run_appends_first")
    owner = TestClient(TestServer(process(fake_model, tmp_path / "a", redis_url, database_url,
                                          files_dir)))
    watcher = TestClient(TestServer(process(fake_model, tmp_path / "b", redis_url, database_url,
                                            files_dir)))
    await owner.start_server()
    owner_runtime = owner.app[RUNTIME]
    try:
        tab = await Chat(client=owner, ws=await owner.ws_connect("/api/ws", headers=AUTH)).start()
        message_id = await tab.send("Ich bin wieder da.")
        async with asyncio.timeout(WAIT):
            await held.reached.wait()  # the owner's answer is committed
        await watcher.start_server()
        watcher_runtime = watcher.app[RUNTIME]
        await redis_client.delete(keys.heartbeat(owner_runtime.instance_id))
        report = await watcher_runtime.recover(only_dead_owners=True)
        assert len(report.requeued) == 1
        await tab.response(message_id)  # the rerun delivered it
        held.gate.set()  # the late run goes on: its delivery is fenced
        await asyncio.gather(owner_runtime.idle(), watcher_runtime.idle())
        await tab.settle()

        outcomes = [m for m in tab.seen if m["type"] in ("character_response", "turn_failed")
                    and message_id in m["message_ids"]]
        assert [m["type"] for m in outcomes] == ["character_response"]
        assert "answer of this run stored already (a rerun)" in caplog.text
        assert "late result for an ended turn dropped" in caplog.text
        turn_id = outcomes[0]["turn_id"]
        turn = await tab.get(f"/api/turns/{turn_id}")
        assert turn["state"] == "delivered" and turn["attempts"] == 2
        session = await tab.get("/api/characters/nova/session")
        assert Counter((t["turn_id"], t["rolle"]) for t in session["turns"]) == {
            (turn_id, "user"): 1, (turn_id, "assistant"): 1}
        assert await redis_client.llen(keys.message_outbox("local", "nova")) == 0

        stores = [owner.app[DB]] if database_url else [owner.app[DB], watcher.app[DB]]
        counts = []
        for store in stores:
            rows = await MessageLog(store).for_user("local", character_id="nova")
            counts.append(Counter((r.turn_id, r.role) for r in rows))
        assert all(c[(turn_id, "assistant")] <= 1 and c[(turn_id, "user")] <= 1
                   for c in counts)
        if database_url:  # the shared store: the answer's row exactly once
            assert counts == [{(turn_id, "user"): 1, (turn_id, "assistant"): 1}]
        else:
            assert sum(c[(turn_id, "assistant")] for c in counts) >= 1
        await tab.close()
    finally:
        await owner.close()
        await watcher.close()
