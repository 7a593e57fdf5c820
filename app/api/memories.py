"""Long-term memory, the user's view (design §3a, §9): what the character keeps about its user,
searched, corrected and forgotten by the user.

- `GET /api/characters/{cid}/memories?q=&include_superseded=` → the pair's memories, newest
  first, live ones only unless `include_superseded=true`; `q` searches them (FTS5).
- `PUT /api/characters/{cid}/memories/{memory_id}` `{"text"}` → 200, the edited memory.
- `DELETE /api/characters/{cid}/memories/{memory_id}` → 204; gone for real (row, index,
  database file).
- `DELETE /api/characters/{cid}/memories` → 200 `{"forgotten": n}`: "Alles vergessen" —
  every memory of the pair and every promotion trigger still waiting for it. The session is
  not touched (and a session reset does not touch long-term memory).
"""

from __future__ import annotations

import contextlib

import msgspec
from aiohttp import web

from app.api.access import known_character
from app.api.app_keys import LONG_TERM, REDIS, SEARCHES, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_json, search_text
from app.api.wire import answer
from app.memory.long_term import MEMORY_ID
from app.memory.pixie_queue import PixieQueue

_TRUE = {"1", "true", "yes"}
_FALSE = {"", "0", "false", "no"}


class MemoryEdit(msgspec.Struct, forbid_unknown_fields=True):
    text: str


def _memory_id(request: web.Request) -> str:
    memory_id = request.match_info["memory_id"]
    if not MEMORY_ID.fullmatch(memory_id):
        raise ApiError(404, "unknown_memory", f"no memory {memory_id!r}")
    return memory_id


def _flag(request: web.Request, name: str) -> bool:
    value = request.query.get(name, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ApiError(400, "invalid_request", f"{name} must be true or false, not {value!r}")


async def list_memories(request: web.Request) -> web.Response:
    character_id = known_character(request)
    query = search_text(request, request.app[SETTINGS].max_message_chars)
    include_superseded = _flag(request, "include_superseded")
    turn = request.app[SEARCHES].turn(request[USER_ID]) if query else contextlib.nullcontext()
    async with turn:  # a search counts among the user's searches (`app.api.searches`)
        memories = await request.app[LONG_TERM].list(
            request[USER_ID], character_id, query=query, include_superseded=include_superseded
        )
    return answer([m.view() for m in memories])


async def edit_memory(request: web.Request) -> web.Response:
    character_id = known_character(request)
    memory_id = _memory_id(request)
    body = await read_json(request, MemoryEdit)
    text = bounded_text(
        body.text,
        limit=request.app[SETTINGS].max_message_chars,
        noun="memory text",
        empty_code="empty_text",
        long_code="text_too_long",
        user_id=request[USER_ID],
    )
    # One line in every prompt it goes into: line breaks become spaces.
    text = " ".join(text.split())
    memory = await request.app[LONG_TERM].edit(request[USER_ID], character_id, memory_id, text)
    if memory is None:
        raise ApiError(404, "unknown_memory", f"no memory {memory_id!r}")
    return answer(memory.view())


async def forget_memory(request: web.Request) -> web.Response:
    character_id = known_character(request)
    memory_id = _memory_id(request)
    if not await request.app[LONG_TERM].forget(request[USER_ID], character_id, memory_id):
        raise ApiError(404, "unknown_memory", f"no memory {memory_id!r}")
    return web.Response(status=204)


async def forget_all(request: web.Request) -> web.Response:
    character_id = known_character(request)
    user_id = request[USER_ID]
    # Waiting triggers first: none of them may bring a forgotten fact back.
    await PixieQueue(request.app[REDIS], user_id, character_id).clear()
    forgotten = await request.app[LONG_TERM].forget_all(user_id, character_id)
    return web.json_response({"forgotten": forgotten})


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters/{cid}/memories", list_memories)
    app.router.add_delete("/api/characters/{cid}/memories", forget_all)
    app.router.add_put("/api/characters/{cid}/memories/{memory_id}", edit_memory)
    app.router.add_delete("/api/characters/{cid}/memories/{memory_id}", forget_memory)
