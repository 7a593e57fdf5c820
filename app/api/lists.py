"""`GET /api/characters/{cid}/lists` (SPEC §9): the notes agent's lists and their items."""

from __future__ import annotations

from aiohttp import web

from app.api.app_keys import REDIS
from app.api.messages import known_character
from app.api.middleware import USER_ID
from app.memory.lists import ListStore


async def get_lists(request: web.Request) -> web.Response:
    """`[{name, items, created_at, updated_at}]`, oldest list first."""
    character_id = known_character(request)
    lists = await ListStore(request.app[REDIS], request[USER_ID], character_id).all()
    return web.json_response([{"name": item.name, "items": item.items,
                               "created_at": item.created_at, "updated_at": item.updated_at}
                              for item in lists])


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters/{cid}/lists", get_lists)
