"""`kill -9` while the Pixie worker consolidates, then a restart: the promotion trigger is
not lost (SPEC §3a: the Pixie queue is reliable like the event queue).

The real entry point runs as a subprocess against the fake model server, which hangs on the
first `consolidation` call. The process is killed with SIGKILL while it waits there (the
trigger sits in the processing list) and started again on the same data dir: recovery puts
the trigger back, the worker consolidates it, and the memory is there — once.
"""

from __future__ import annotations

import asyncio
import signal

from tests.fakemodel import Fault
from tests.procs import AppProcess, clean_env

WAIT = 30.0
FACT = "Meine Schwester heißt Jana und wohnt in Leipzig."


def app_env(fake_model) -> dict[str, str]:
    return clean_env(NOVABERG_LLM_PROVIDER="openai", NOVABERG_LLM_URL=fake_model.url,
                     NOVABERG_LLM_MODEL="fake", NOVABERG_LLM_CONTEXT="8192",
                     NOVABERG_MODEL_BACKOFF_SECONDS="0.01", NOVABERG_PIXIE_POLL_SECONDS="0.05")


async def test_kill_9_during_consolidation_then_restart_keeps_the_trigger(fake_model, data_dir):
    fake_model.script("salience", {"importance": 0.9, "segments": [FACT]})
    fake_model.script("consolidation", Fault.hang(),
                      {"memories": [{"action": "remember", "text": FACT, "kind": "person"}]})
    proc = AppProcess(data_dir, env=app_env(fake_model))
    await asyncio.to_thread(proc.start)
    try:
        status, body = await asyncio.to_thread(proc.post, "/api/characters/nova/messages",
                                               {"text": FACT})
        assert status == 202, body
        async with asyncio.timeout(WAIT):
            while not fake_model.chats("consolidation"):
                await asyncio.sleep(0.02)
        status, kept = await asyncio.to_thread(proc.get, "/api/characters/nova/memories")
        assert status == 200 and kept == []
        proc.process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(proc.process.wait)
    finally:
        if proc.process is not None and proc.process.poll() is None:
            proc.kill()

    again = AppProcess(data_dir, port=proc.port, env=app_env(fake_model))
    await asyncio.to_thread(again.start)
    try:
        async with asyncio.timeout(WAIT):
            while True:
                status, kept = await asyncio.to_thread(again.get,
                                                       "/api/characters/nova/memories")
                assert status == 200
                if kept:
                    break
                await asyncio.sleep(0.05)
        assert [m["text"] for m in kept] == [FACT]
        assert len(fake_model.chats("consolidation")) == 2
        assert "restored_triggers" in again.output()
    finally:
        again.stop()
