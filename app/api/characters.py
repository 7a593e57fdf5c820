"""Characters and a pair's session and state (SPEC §9)."""

from __future__ import annotations

import msgspec
from aiohttp import web

from app.api.app_keys import CHARACTERS, REDIS, RUNTIME, SETTINGS
from app.api.messages import known_character
from app.api.middleware import USER_ID
from app.memory.session import SessionMemory
from app.memory.state import load_state
from app.memory.turns import ORIGIN_OF_OCCASION

_ENCODER = msgspec.json.Encoder()


def _json(value: object, status: int = 200) -> web.Response:
    return web.Response(body=_ENCODER.encode(value), status=status,
                        content_type="application/json")


async def list_characters(request: web.Request) -> web.Response:
    """`GET /api/characters` → `[{id, name, …}]`."""
    return _json([c.public() for c in request.app[CHARACTERS].all()])


async def get_session(request: web.Request) -> web.Response:
    """`GET /api/characters/{cid}/session` → `{"turns": [Turn…], "summary": str|null,
    "origins": {herkunft: origin}}`, turns with the seed's German field names; `origins` is
    the server's one table from a stored turn's `herkunft` to the `origin` a live
    `character_response` names, so the UI shows a turn from the session as it showed it live
    and keeps no copy of the table."""
    character_id = known_character(request)
    memory = SessionMemory(request.app[REDIS], request.app[SETTINGS])
    turns, summary = await memory.retrieve(request[USER_ID], character_id)
    return _json({"turns": turns, "summary": summary, "origins": ORIGIN_OF_OCCASION})


async def delete_session(request: web.Request) -> web.Response:
    """`DELETE /api/characters/{cid}/session` → 204. Open turns and queued messages of the
    pair end with `turn_failed` (reason `session_reset`), never silently."""
    character_id = known_character(request)
    await request.app[RUNTIME].reset_pair(request[USER_ID], character_id)
    return web.Response(status=204)


async def get_state(request: web.Request) -> web.Response:
    """`GET /api/characters/{cid}/state` → the `nova_state` fields."""
    character_id = known_character(request)
    return _json(await load_state(request.app[REDIS], request[USER_ID], character_id))


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters", list_characters)
    app.router.add_get("/api/characters/{cid}/session", get_session)
    app.router.add_delete("/api/characters/{cid}/session", delete_session)
    app.router.add_get("/api/characters/{cid}/state", get_state)
