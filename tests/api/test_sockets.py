"""Issue 11, item 6: logout closes that session's sockets; a per-user cap on open sockets
closes the oldest. Issue 24, item 10: a revoked token's or a deleted user's sockets close
within a second."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from app.wiring.server import create_app
from tests.accounts import add_user
from tests.conftest import AUTH, TOKEN
from tests.store import store_connection


@pytest.fixture
def anna(settings):
    return add_user(settings)


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


# --- issue 24, item 10: sockets live only as long as their credentials --------------------------

CLOSE_WITHIN = 1.0  # seconds: a revoked or deleted user's sockets are closed this soon


def anna_token(settings) -> str:

    conn = store_connection(settings)
    try:
        from app.auth.accounts import list_tokens_sync

        [(token_id, _, _)] = list_tokens_sync(conn, "anna")
        return token_id
    finally:
        conn.close()


async def closed_within(ws: aiohttp.ClientWebSocketResponse, seconds: float) -> int | None:
    """The close code, if the server closes the socket within `seconds` (from now)."""
    try:
        return await closed_with(ws, seconds)
    except asyncio.TimeoutError:
        return None


async def codes_within(sockets: dict[str, aiohttp.ClientWebSocketResponse],
                       seconds: float) -> dict[str, int | None]:
    """Each socket's close code within `seconds`, all read at once (as tabs do: a socket whose
    close frame nobody reads is cut off after a second, 1006)."""
    codes = await asyncio.gather(*(closed_within(ws, seconds) for ws in sockets.values()))
    return dict(zip(sockets, codes, strict=True))


@pytest.fixture
async def anna_sockets(aiohttp_client, make_settings, anna):
    """Anna logged in (a session socket) and with her API token (a bearer and a ?token=
    socket); `local`'s socket beside them."""
    token = anna
    client = await aiohttp_client(create_app(make_settings(headless=True), local_token=TOKEN))
    assert (await client.post("/api/login", json={"name": "anna",
                                                  "password": "correct horse battery"})).status == 200
    script = await aiohttp_client(client.server)  # no cookie: its ?token= is what counts
    sockets = {
        "session": await client.ws_connect("/api/ws"),
        "bearer": await script.ws_connect("/api/ws", headers={"Authorization": f"Bearer {token}"}),
        "query": await script.ws_connect(f"/api/ws?token={token}"),
        "local": await script.ws_connect("/api/ws", headers=AUTH),
    }
    yield client, sockets
    for ws in sockets.values():
        await ws.close()


async def test_revoking_a_token_closes_its_sockets_within_a_second(anna_sockets, settings):
    from app.api.app_keys import DB
    from app.auth.accounts import revoke_token_sync

    client, sockets = anna_sockets
    token_id = anna_token(settings)
    # The row goes as `novaberg token revoke ID` removes it, through the app's one writer
    # (the command itself refuses beside a running app; another process on the database, or
    # a revocation the app itself makes, ends it the same way).
    assert await client.app[DB].execute_write_fn(
        lambda conn: revoke_token_sync(conn, token_id)) == 1
    # Her login session is not the token: it stays, like local's.
    assert await codes_within(sockets, CLOSE_WITHIN) == {
        "session": None, "bearer": 4401, "query": 4401, "local": None}


async def test_a_deleted_users_sockets_close_within_a_second(anna_sockets, settings):
    """What `novaberg user delete` removes (her rows, her Redis keys and sessions) ends
    every socket of hers, whatever opened it; nobody else's."""
    import redis as sync_redis

    from app.api.app_keys import REDIS
    from app.auth.accounts import delete_user_sync
    from app.memory.purge import purge_user

    client, sockets = anna_sockets
    conn = store_connection(settings)
    assert delete_user_sync(conn, "anna")
    conn.close()
    pool = client.app[REDIS].connection_pool.connection_kwargs
    with sync_redis.Redis(unix_socket_path=pool["path"], db=pool.get("db", 0)) as redis:
        purge_user(redis, "anna")
    assert await codes_within(sockets, CLOSE_WITHIN) == {
        "session": 4401, "bearer": 4401, "query": 4401, "local": None}
