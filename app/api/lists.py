"""The notes agent's lists over HTTP (design §9, §5 "Lists and reminders can be edited and
deleted by API, page and chat").

- `GET /api/characters/{cid}/lists`: the lists and their items.
- `PATCH /api/characters/{cid}/lists/{name}` `{"name"}`: rename a list.
- `DELETE /api/characters/{cid}/lists/{name}`: remove a list with its items.
- `PATCH /api/characters/{cid}/lists/{name}/items/{item}` `{"text"}`: change an item in place.
- `DELETE /api/characters/{cid}/lists/{name}/items/{item}`: cross an item off.

A list is named by its name and an item by its text, as the user sees them (URL-encoded;
case and surrounding spaces do not matter, as everywhere in `app.memory.lists`). Only the
caller's own lists of that character are found: anything else is 404. The store writes at
once, with its compare-and-set: a turn's list edit committed meanwhile is not lost, nor is
this change lost to the turn.
"""

from __future__ import annotations

import msgspec
from aiohttp import web

from app.api.access import known_character
from app.api.app_keys import LISTS, SETTINGS
from app.api.middleware import USER_ID
from app.api.validation import bounded_text, read_json
from app.api.wire import answer
from app.memory.lists import ListStore

BASE = "/api/characters/{cid}/lists"


class ListRename(msgspec.Struct, forbid_unknown_fields=True):
    name: str


class ItemEdit(msgspec.Struct, forbid_unknown_fields=True):
    text: str


def _store(request: web.Request) -> ListStore:
    return request.app[LISTS].of(request[USER_ID], known_character(request))


def _text(request: web.Request, raw: str, noun: str) -> str:
    return bounded_text(
        raw,
        limit=request.app[SETTINGS].max_message_chars,
        noun=noun,
        empty_code="empty_text",
        long_code="text_too_long",
        user_id=request[USER_ID],
    )


async def get_lists(request: web.Request) -> web.Response:
    """`[{name, items, created_at, updated_at}]`, oldest list first: each list as stored
    (`NamedList`, whose field order is the answer's)."""
    return answer(await _store(request).all())


async def rename_list(request: web.Request) -> web.Response:
    store = _store(request)
    body = await read_json(request, ListRename)
    name = _text(request, body.name, "list name")
    renamed = await store.rename_list(request.match_info["name"], name)
    return answer(renamed)


async def delete_list(request: web.Request) -> web.Response:
    await _store(request).delete_list(request.match_info["name"])
    return web.Response(status=204)


async def edit_item(request: web.Request) -> web.Response:
    store = _store(request)
    body = await read_json(request, ItemEdit)
    text = _text(request, body.text, "item")
    changed = await store.replace_item(request.match_info["name"], request.match_info["item"], text)
    return answer(changed)


async def delete_item(request: web.Request) -> web.Response:
    changed = await _store(request).remove_item(
        request.match_info["name"], request.match_info["item"]
    )
    return answer(changed)


def setup(app: web.Application) -> None:
    app.router.add_get(BASE, get_lists)
    app.router.add_patch(BASE + "/{name}", rename_list)
    app.router.add_delete(BASE + "/{name}", delete_list)
    app.router.add_patch(BASE + "/{name}/items/{item}", edit_item)
    app.router.add_delete(BASE + "/{name}/items/{item}", delete_item)
