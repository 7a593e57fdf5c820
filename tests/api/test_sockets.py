"""Issue 11, item 6: logout closes that session's sockets; a per-user cap on open sockets
closes the oldest."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from app.auth.accounts import add_user_sync
from app.wiring.server import DATABASE_FILE, create_app
from tests.conftest import AUTH, TOKEN


@pytest.fixture
def anna(settings):
    settings.data_path.mkdir(parents=True, exist_ok=True)
    from app.storage.database import connect
    from app.storage.migrations import apply_migrations

    conn = connect(settings.data_path / DATABASE_FILE)
    apply_migrations(conn)
    add_user_sync(conn, "anna", "correct horse battery")
    conn.close()


async def closed_with(ws: aiohttp.ClientWebSocketResponse, timeout: float = 5.0) -> int | None:
    """The close code once the server closes the socket (snapshot messages are skipped)."""
    async def wait() -> int | None:
        async for _ in ws:
            pass
        return ws.close_code

    return await asyncio.wait_for(wait(), timeout)


async def test_logout_closes_that_sessions_sockets_only(aiohttp_client, make_settings, anna):
    client = await aiohttp_client(create_app(make_settings(headless=True,
                                                           llm_provider="offline")))
    login = await client.post("/api/login", json={"name": "anna",
                                                  "password": "correct horse battery"})
    assert login.status == 200
    by_cookie = await client.ws_connect("/api/ws")
    other = await aiohttp_client(client.server)  # a second browser, same server
    login2 = await other.post("/api/login", json={"name": "anna",
                                                  "password": "correct horse battery"})
    assert login2.status == 200
    other_tab = await other.ws_connect("/api/ws")

    assert (await client.post("/api/logout")).status == 204
    assert await closed_with(by_cookie) == 4401
    # The other login session of the same user keeps its socket: the user's next message
    # reaches it there.
    sent = await other.post("/api/characters/nova/messages", json={"text": "Noch da?"})
    assert sent.status == 202, await sent.text()
    message_id = (await sent.json())["message_id"]
    async with asyncio.timeout(10):
        while (message := await other_tab.receive_json())["type"] != "message_accepted":
            pass
    assert message["message_id"] == message_id and not other_tab.closed
    await other_tab.close()


async def test_sockets_per_user_are_capped_oldest_closed_first(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline",
                                                          max_sockets_per_user=2),
                                             local_token=TOKEN))
    first = await client.ws_connect("/api/ws", headers=AUTH)
    second = await client.ws_connect("/api/ws", headers=AUTH)
    third = await client.ws_connect("/api/ws", headers=AUTH)
    assert await closed_with(first) == 1008
    assert not second.closed and not third.closed
    # The survivors still get everything.
    accepted = await client.post("/api/characters/nova/messages", json={"text": "hallo"},
                                 headers=AUTH)
    assert accepted.status == 202
    for ws in (second, third):
        while True:
            message = await asyncio.wait_for(ws.receive_json(), 5)
            if message["type"] == "message_accepted":
                break
        await ws.close()
