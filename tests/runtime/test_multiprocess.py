"""Several processes on one external Redis (`redis_url`, the scale-out path of design §1/§5):
the run slots live in Redis, input wakes the pair in every process, a response reaches the
tabs connected to any process — and no message is answered twice or lost."""

from __future__ import annotations

import asyncio

import pytest

from app.api.app_keys import CHARACTERS, PIPELINES, REDIS, RUNTIME
from app.core import settings as settings_module
from app.memory import keys
from app.runtime.minimal import minimal_pipelines
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import Fault, Reply
from tests.pipeline_support import Chat
from tests.runtime_support import CATALOG, responders
from tests.waiting import until


def process(fake_model, data_dir, redis_url: str, **overrides):
    settings = settings_module.defaults(data_dir=str(data_dir), redis_url=redis_url,
                                        **fake_model.overrides(**overrides))
    app = create_app(settings, local_token=TOKEN)
    app[PIPELINES] = minimal_pipelines()
    app[CHARACTERS] = CATALOG
    return app


# The processes get `redis_client`'s socket as their external Redis: a server of its own, which
# the test's processes share and nothing else (tests/conftest.py `SessionRedis`).
@pytest.mark.own_redis
async def test_two_processes_share_pairs_slots_and_tabs(fake_model, redis_client, tmp_path,
                                                        aiohttp_client):
    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    fake_model.always("responder", Reply("ok", delay=0.05))
    one = await aiohttp_client(process(fake_model, tmp_path / "a", redis_url,
                                       model_concurrency=4))
    two = await aiohttp_client(process(fake_model, tmp_path / "b", redis_url,
                                       model_concurrency=4))
    tab_one = await Chat(client=one, ws=await one.ws_connect("/api/ws", headers=AUTH)).start()
    tab_two = await Chat(client=two, ws=await two.ws_connect("/api/ws", headers=AUTH)).start()

    sent = []
    for i in range(6):
        for chat, character in ((tab_one, "nova"), (tab_two, "luna")):
            sent.append(await chat.send(f"{character} {i}", character_id=character))
    for tab in (tab_one, tab_two):  # every tab hears every outcome, whichever process ran it
        for message_id in sent:
            await tab.response(message_id)
    await asyncio.gather(one.app[RUNTIME].idle(), two.app[RUNTIME].idle())

    answered = [i for m in tab_one.of_type("character_response") for i in m["message_ids"]]
    assert sorted(answered) == sorted(sent)  # each message answered exactly once
    assert [m["message_ids"] for m in tab_one.of_type("character_response")] == [
        m["message_ids"] for m in tab_two.of_type("character_response")]
    assert fake_model.max_in_flight == 1  # graph_slots = 1 across both processes
    assert len(responders(fake_model)) == len(tab_one.of_type("character_response"))
    redis = one.app[REDIS]
    for character in ("nova", "luna"):
        assert await redis.llen(keys.prompt_queue("local", character)) == 0
        assert await redis.get(keys.turn_marker("local", character)) is None
    assert await redis.zcard(keys.run_slots(fake_model.url)) == 0
    for tab in (tab_one, tab_two):
        await tab.close()


# The processes get `redis_client`'s socket as their external Redis (see above).
@pytest.mark.own_redis
async def test_processes_with_a_model_server_each_run_at_once(fake_model, start_fake_model,
                                                               redis_client, tmp_path,
                                                               aiohttp_client):
    """Slots belong to a model endpoint (issue 26): two processes on one Redis, each with a
    model server of its own and graph_slots 1, run a turn each at the same time — both
    models are called while neither has answered (with one slot for the cluster the
    second call would wait for the first answer, which never comes)."""
    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    own_model = await start_fake_model()
    for model in (fake_model, own_model):
        model.always("responder", Fault.hang())
    one = await aiohttp_client(process(fake_model, tmp_path / "a", redis_url, graph_slots=1))
    two = await aiohttp_client(process(own_model, tmp_path / "b", redis_url, graph_slots=1))
    tab_one = await Chat(client=one, ws=await one.ws_connect("/api/ws", headers=AUTH)).start()
    await tab_one.send("Hallo Nova", character_id="nova")
    # Both processes consume the shared pairs: either may run the first turn, and its slot is
    # then taken (graph_slots 1) — the second turn can only run on the other one's model.
    busy = await until(lambda: next((model for model in (fake_model, own_model)
                                     if model.chats("responder")), None),
                       what="a responder request on either model")
    tab_two = await Chat(client=two, ws=await two.ws_connect("/api/ws", headers=AUTH)).start()
    await tab_two.send("Hallo Luna", character_id="luna")
    other = own_model if busy is fake_model else fake_model
    await other.wait_requests(1, "responder")  # the other process runs meanwhile
    redis = one.app[REDIS]
    assert await redis.zcard(keys.run_slots(fake_model.url)) == 1
    assert await redis.zcard(keys.run_slots(own_model.url)) == 1
    for tab in (tab_one, tab_two):
        await tab.close()


# The processes get `redis_client`'s socket as their external Redis: a server of its own, which
# the test's processes share and nothing else (tests/conftest.py `SessionRedis`).
@pytest.mark.own_redis
async def test_a_live_process_recovers_the_turn_of_a_process_that_died(
        fake_model, redis_client, tmp_path):
    """The orphan sweep: a process whose heartbeat is gone left a turn in path 2; another
    process, running all along, retries it (same id, attempt 2) and answers it."""
    from aiohttp.test_utils import TestClient, TestServer

    redis_url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    fake_model.script("responder", Fault.hang(), "Übernommen.")
    dying = TestClient(TestServer(process(fake_model, tmp_path / "b", redis_url,
                                          heartbeat_seconds=1.0)))
    await dying.start_server()
    survivor = TestClient(TestServer(process(fake_model, tmp_path / "a", redis_url,
                                             heartbeat_seconds=1.0)))
    try:
        response = await dying.post("/api/characters/luna/messages", json={"text": "Hallo"},
                                    headers=AUTH)
        message_id = (await response.json())["message_id"]
        await fake_model.wait_requests(1, "responder")
        # The survivor starts while the other one runs the turn: its start-up recovery
        # leaves a live process's turn alone.
        await survivor.start_server()
        tab = await Chat(client=survivor,
                         ws=await survivor.ws_connect("/api/ws", headers=AUTH)).start()
        turn_id = (await (await dying.get(f"/api/messages/{message_id}",
                                          headers=AUTH)).json())["turn_id"]
        owner = await redis_client.hget(keys.turn_record(turn_id), "owner")
        assert owner == dying.app[RUNTIME].instance_id  # the dying process ran it
        await dying.close()  # its runtime stops mid-turn; its heartbeat is gone

        answer = await tab.response(message_id)  # the survivor's sweep picks it up
        assert answer["text"] == "Übernommen." and answer["turn_id"] == turn_id
        turn = await tab.get(f"/api/turns/{turn_id}")
        assert turn["attempts"] == 2 and turn["state"] == "delivered"
        assert await redis_client.hget(keys.turn_record(turn_id), "owner") == (
            survivor.app[RUNTIME].instance_id)
        await tab.close()
    finally:
        await dying.close()
        await survivor.close()


# The processes get `redis_client`'s socket as their external Redis (see above).
@pytest.mark.own_redis
async def test_a_deleted_users_sockets_close_in_every_process(fake_model, redis_client,
                                                              tmp_path, aiohttp_client):
    """Issue 24, item 10: her login session is shared through Redis, so a socket of hers on
    any process closes within a second of her deletion, and of her logout."""
    import aiohttp
    import redis as sync_redis

    from app.api.middleware import SESSION_COOKIE
    from app.auth.accounts import delete_user_sync
    from app.memory.purge import purge_user
    from app.storage.database import connect
    from tests.accounts import add_user

    socket_path = redis_client.connection_pool.connection_kwargs["path"]
    redis_url = f"unix://{socket_path}"
    add_user(tmp_path / "a")
    one = await aiohttp_client(process(fake_model, tmp_path / "a", redis_url, headless=True))
    two = await aiohttp_client(process(fake_model, tmp_path / "b", redis_url, headless=True))

    async def login() -> str:
        response = await one.post("/api/login", json={"name": "anna",
                                                      "password": "correct horse battery"})
        assert response.status == 200
        return response.cookies[SESSION_COOKIE].value

    async def closed_within(ws: aiohttp.ClientWebSocketResponse, seconds: float) -> int | None:
        try:
            async with asyncio.timeout(seconds):
                async for _ in ws:
                    pass
        except TimeoutError:
            return None
        return ws.close_code

    def session_socket(client, session_id: str):
        return client.ws_connect("/api/ws", headers={"Cookie": f"{SESSION_COOKIE}={session_id}"})

    # Logout on one process ends the session's sockets on both.
    session_id = await login()
    here, there = await session_socket(one, session_id), await session_socket(two, session_id)
    one.session.cookie_jar.update_cookies({SESSION_COOKIE: session_id})
    assert (await one.post("/api/logout")).status == 204
    assert await asyncio.gather(closed_within(here, 1.0), closed_within(there, 1.0)) == [
        4401, 4401]

    # Her deletion (rows and Redis keys, as `novaberg user delete` removes them) too.
    session_id = await login()
    here, there = await session_socket(one, session_id), await session_socket(two, session_id)
    local = await two.ws_connect("/api/ws", headers=AUTH)
    conn = connect(tmp_path / "a" / "novaberg.sqlite3")
    assert delete_user_sync(conn, "anna")
    conn.close()
    with sync_redis.Redis(unix_socket_path=socket_path) as redis:
        purge_user(redis, "anna")
    assert await asyncio.gather(closed_within(here, 1.0), closed_within(there, 1.0),
                                closed_within(local, 1.0)) == [4401, 4401, None]
    await local.close()
