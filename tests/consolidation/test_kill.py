"""`kill -9` while the Pixie worker consolidates, then a restart: the promotion trigger is
not lost (design §3a: the Pixie queue is reliable like the event queue).

The real entry point runs as a subprocess against the fake model server, which hangs on the
first `consolidation` call. The process is killed with SIGKILL while it waits there (the
trigger sits in the processing list) and started again on the same data dir: recovery puts
the trigger back, the worker consolidates it, and the memory is there — once.
"""

from __future__ import annotations

from functools import partial

from tests.fakemodel import Fault
from tests.kill_support import WAIT, app_to_kill, call, fake_model_env, get, restarted
from tests.waiting import until

FACT = "Meine Schwester heißt Jana und wohnt in Leipzig."


async def test_kill_9_during_consolidation_then_restart_keeps_the_trigger(fake_model, data_dir):
    fake_model.script("salience", {"importance": 0.9, "segments": [FACT]})
    fake_model.script("consolidation", Fault.hang(),
                      {"memories": [{"action": "remember", "text": FACT, "kind": "person"}]})
    env = fake_model_env(fake_model, NOVABERG_PIXIE_POLL_SECONDS="0.05")
    async with app_to_kill(data_dir, env) as proc:
        status, body = await call(proc, "POST", "/api/characters/nova/messages", {"text": FACT})
        assert status == 202, body
        await fake_model.wait_requests(1, "consolidation", timeout=WAIT)
        status, kept = await call(proc, "GET", "/api/characters/nova/memories")
        assert status == 200 and kept == []

    async with restarted(proc, env) as again:
        kept = await until(partial(get, again, "/api/characters/nova/memories"), timeout=WAIT,
                           every=0.05, what="the memory the trigger makes")
        assert [m["text"] for m in kept] == [FACT]
        assert len(fake_model.chats("consolidation")) == 2
        assert "restored_triggers" in again.output()
