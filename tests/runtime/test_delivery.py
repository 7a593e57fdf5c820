"""The delivery hub (design §5 Delivery, §9): every tab of a user gets every message; a stalled
tab never delays the others; a reconnecting tab learns the state of its open turns."""

from __future__ import annotations

import asyncio
import logging
import socket

import aiohttp

from app.api.app_keys import HUB
from app.pipeline.vocabulary import Pipelines
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import Reply
from tests.pipeline_support import WAIT, Chat, open_chat
from tests.runtime_support import runtime_app
from tests.waiting import until


async def test_two_websockets_of_a_user_both_receive_everything(fake_model, make_settings,
                                                                aiohttp_client):
    fake_model.script("responder", "Hallo ihr beiden!")
    one = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    other = await Chat(client=one.client,
                       ws=await one.client.ws_connect("/api/ws", headers=AUTH)).start()
    sent = await one.send("Hallo")
    first, second = await one.response(sent), await other.response(sent)
    await one.settle()
    assert first == second and first["text"] == "Hallo ihr beiden!"
    assert first["turn_id"] and first["emotion"] == "neutral" and first["arousal"] == 0.5
    for chat in (one, other):
        accepted = chat.of_type("message_accepted")
        assert [(m["message_id"], m["text"]) for m in accepted] == [(sent, "Hallo")]
        for message in chat.seen:
            assert {"type", "character_id", "at"} <= set(message)
        # the same sequence of messages reached both tabs
    assert [m["type"] for m in one.seen] == [m["type"] for m in other.seen]
    await other.close()
    await one.close()


async def stalled_websocket(port: int) -> socket.socket:
    """A WebSocket client that completes the handshake and then never reads again."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    request = (f"GET /api/ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {TOKEN}\r\n\r\n")
    await loop.sock_sendall(sock, request.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += await loop.sock_recv(sock, 1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


async def test_a_stalled_websocket_is_dropped_and_never_delays_the_others(
        fake_model, make_settings, aiohttp_client, caplog):
    caplog.set_level(logging.WARNING, logger="app.runtime.hub")
    # The turn stays in path 1: this test is about fan-out only, not about the model.
    chat = await open_chat(aiohttp_client, runtime_app(
        fake_model, make_settings, pipelines=Pipelines(path1=_hold, path2=_hold),
        ws_send_queue=4, rate_limit_per_second=1000.0, llm_context=65536))
    hub = chat.app[HUB]
    stalled = await stalled_websocket(chat.client.port)
    try:
        await until(lambda: hub.connections("local") == 2, what="both sockets in the hub")
        # Each message_accepted carries its text: some MB fill every buffer on the way to
        # the stalled peer (kernel socket buffers autotune up to a few MB).
        big = "x" * 19990
        sent = []
        while hub.connections("local") == 2 and len(sent) < 1000:
            sent.append(await chat.send(f"{len(sent)} {big}"))
        assert hub.connections("local") == 1  # the stalled one was dropped, the healthy stays
        more = [await chat.send(f"after {i}") for i in range(3)]
        await chat.wait_for(lambda m: m["type"] == "message_accepted", count=len(sent) + 3)
        assert [m["message_id"] for m in chat.of_type("message_accepted")] == sent + more
        dropped = [r for r in caplog.records if r.getMessage() == "websocket dropped"]
        assert len(dropped) == 1 and dropped[0].fields["setting"] == "ws_send_queue"
    finally:
        stalled.close()
    await chat.close()


async def _hold(ctx, block):
    await asyncio.Event().wait()


async def test_a_reconnecting_tab_gets_its_queued_messages_and_open_turns_first(
        fake_model, make_settings, aiohttp_client):
    fake_model.script("responder", Reply("langsam", delay=0.5), "danach")
    chat = await open_chat(aiohttp_client, runtime_app(fake_model, make_settings))
    running = await chat.send("eins")
    await fake_model.wait_requests(1, "responder")
    waiting = await chat.send("zwei")
    late = await Chat(client=chat.client,
                      ws=await chat.client.ws_connect("/api/ws", headers=AUTH)).start()
    await late.wait_for(lambda m: m["type"] in ("turn_state", "message_accepted"), count=2)
    snapshot = late.seen[:2]
    assert {(m["type"], m.get("message_id"), m.get("state")) for m in snapshot} == {
        ("message_accepted", waiting, None), ("turn_state", None, "path2")}
    open_turn = next(m for m in snapshot if m["type"] == "turn_state")
    assert open_turn["message_ids"] == [running]
    # ... and then every outcome, live.
    await late.response(running)
    await late.response(waiting)
    await chat.settle()
    await late.close()
    await chat.close()


async def test_the_websocket_needs_auth_before_the_upgrade_and_accepts_the_query_token(
        fake_model, make_settings, aiohttp_client):
    client = await aiohttp_client(runtime_app(fake_model, make_settings))
    try:
        await client.ws_connect("/api/ws")
    except aiohttp.WSServerHandshakeError as exc:
        assert exc.status == 401
    else:  # pragma: no cover
        raise AssertionError("unauthenticated WebSocket accepted")
    ws = await client.ws_connect(f"/api/ws?token={TOKEN}")
    assert not ws.closed
    await ws.close()


async def test_a_tab_that_stops_answering_pings_is_closed(fake_model, make_settings,
                                                          aiohttp_client):
    client = await aiohttp_client(runtime_app(fake_model, make_settings,
                                              ws_heartbeat_seconds=1.0))
    hub = client.app[HUB]
    ws = await client.ws_connect("/api/ws", headers=AUTH, autoping=False)
    await until(lambda: hub.connections("local") == 1, what="the socket in the hub")
    message = await ws.receive(timeout=WAIT)  # the server's ping, which we leave unanswered
    assert message.type == aiohttp.WSMsgType.PING
    await until(lambda: hub.connections("local") == 0, every=0.05,
                what="the hub to close the silent socket")
    await ws.close()
