"""`GET /api/ws`: the WebSocket every tab keeps open (design §9).

Auth and Origin are checked by the middleware before the upgrade (a refused handshake gets
its HTTP status); the socket keeps the credential that opened it and is closed (4401) once
that no longer authenticates (`app.runtime.hub`). The server sends; what a client sends is ignored. On (re)connect the tab
first gets its queued messages and the state of its open turns, then everything live.
aiohttp's heartbeat pings every `ws_heartbeat_seconds` and closes a peer that stops
answering.
"""

from __future__ import annotations

from aiohttp import WSMsgType, web

from app.api.app_keys import HUB, RUNTIME, SETTINGS
from app.api.middleware import CREDENTIAL, USER_ID


async def websocket(request: web.Request) -> web.WebSocketResponse:
    user_id = request[USER_ID]
    ws = web.WebSocketResponse(heartbeat=request.app[SETTINGS].ws_heartbeat_seconds)
    await ws.prepare(request)
    hub = request.app[HUB]
    conn = hub.register(user_id, ws, request.transport, request.get(CREDENTIAL))
    try:
        hub.start_sending(conn, await request.app[RUNTIME].snapshot(user_id))
        async for message in ws:
            if message.type == WSMsgType.ERROR:
                break
    finally:
        await hub.unregister(conn)
    return ws


def setup(app: web.Application) -> None:
    app.router.add_get("/api/ws", websocket)
