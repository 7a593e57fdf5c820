"""The wiring (`app.wiring.server`): each service is built once, with what it uses, in an order
that needs no patching. The pipelines' services exist before the reminder clock and the Pixie
worker start; what a turn tells those loops reaches them through callables that exist from the
start (a reminder wakes the clock, a promotion trigger wakes the worker, the memories a prompt
used are noted by it)."""

from __future__ import annotations

import asyncio
import time

from app.api.app_keys import PIPELINE_HOST, PIPELINES, PIXIE, REDIS, REMINDER_CLOCK
from app.memory.pixie_queue import PixieQueue, new_trigger
from tests.pipeline_support import WAIT, fake_app, open_chat
from tests.waiting import until


async def test_one_store_of_each_kind_serves_the_pipelines_and_the_loops(
        fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    host = app[PIPELINE_HOST]
    services = host.services
    assert services.memory is services.memory  # built once, not per use
    assert app[REMINDER_CLOCK].store is services.reminders
    assert app[REMINDER_CLOCK].long_term is services.long_term is app[PIXIE].long_term
    # No test installed other pipelines: the product's are the ones in use.
    assert app[PIPELINES].path2 == host.path2
    await chat.close()


async def test_a_reminder_a_turn_writes_wakes_the_clock(fake_model, make_settings,
                                                        aiohttp_client):
    # A long poll: only the wake lets a reminder due in a moment fire in time for the test.
    app = fake_app(fake_model, make_settings, reminder_poll_seconds=600.0)
    chat = await open_chat(aiohttp_client, app)
    async with asyncio.timeout(WAIT):  # the clock's first round has looked at an empty index
        await app[REMINDER_CLOCK].ticker.wait_rounds(1)
    services = app[PIPELINE_HOST].services
    # As the dispatcher writes it (inside the turn's commit, no wake of its own), then wakes.
    await services.reminders.add("local", "nova", "Pause machen", time.time() + 0.2)
    services.wake_clock()
    impulse = await chat.response(origin="own_impulse")
    assert impulse["text"] and app[REMINDER_CLOCK].fired == 1
    await chat.close()


async def test_a_trigger_and_the_memories_a_prompt_used_reach_the_worker(
        make_settings, aiohttp_client):
    from app.wiring.server import create_app
    from tests.conftest import TOKEN
    app = create_app(make_settings(llm_provider="offline", pixie_poll_seconds=600.0),
                     local_token=TOKEN)
    chat = await open_chat(aiohttp_client, app)
    async with asyncio.timeout(WAIT):  # the worker's first round has found nothing to do
        await app[PIXIE].ticker.wait_rounds(1)
    services = app[PIPELINE_HOST].services
    await PixieQueue(app[REDIS], "local", "nova").push(new_trigger(
        "local", "nova", turn_id="t1", message_ids=["m1"], text="Meine Schwester heißt Jana.",
        segments=[], importance=0.9))
    services.wake_pixie()
    kept = await until(lambda: services.long_term.list("local", "nova"), timeout=WAIT,
                       what="the trigger's memory")
    assert [m.text for m in kept] == ["Meine Schwester heißt Jana."]
    assert kept[0].last_used_at is None

    services.memories_used([kept[0].memory_id], 1234.5)
    services.wake_pixie()
    await until(lambda: services.long_term.list("local", "nova"),
                lambda kept: kept[0].last_used_at is not None, timeout=WAIT,
                what="the usage mark")
    assert (await services.long_term.list("local", "nova"))[0].last_used_at == 1234.5
    await chat.close()


async def test_the_running_server_switches_threads_every_millisecond_and_gives_the_old_interval_back(
        make_settings, tmp_path):
    # While a worker thread computes, the loop waits for the GIL up to the switch interval at
    # each socket call: CPython's 5 ms made another user's answer wait ~45 ms (issue 38).
    import sys

    from aiohttp.test_utils import TestClient, TestServer

    from app.core.settings import defaults
    from app.wiring.server import SWITCH_INTERVAL_S, THREAD_SWITCHES, create_app
    from tests.conftest import TOKEN
    assert THREAD_SWITCHES.runtimes == 0  # no other test left a runtime running
    before = sys.getswitchinterval()
    assert before != SWITCH_INTERVAL_S
    first = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    other_dir = tmp_path / "other"
    other_dir.mkdir(mode=0o700)
    second = create_app(defaults(data_dir=str(other_dir), llm_provider="offline"),
                        local_token=TOKEN)
    one, two = TestClient(TestServer(first)), TestClient(TestServer(second))
    await one.start_server()
    assert (await one.get("/api/health")).status == 200
    assert sys.getswitchinterval() == SWITCH_INTERVAL_S
    await two.start_server()
    await one.close()  # the first stops while the second still runs: its interval stays
    assert sys.getswitchinterval() == SWITCH_INTERVAL_S
    await two.close()
    assert sys.getswitchinterval() == before
