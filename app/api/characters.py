"""Characters (design §9, §11): the list, the editor, pictures, character cards in and out,
and a pair's session and state.

Every call is the caller's: the list holds the built-in, the shared and the caller's own
characters, and another user's own character is unknown here (404) — its definition, its
picture, its card. The work on files runs in a worker thread (`app.characters.service`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
from aiohttp import web

from app.api.access import known_character
from app.api.app_keys import CHARACTER_STORE, CHARACTERS, REDIS, RUNTIME, SESSION, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import read_json, read_upload
from app.api.wire import compact
from app.characters import apart, pictures
from app.characters.catalog import Character
from app.characters.service import CharacterFields, Characters, CharacterView, CopyFields
from app.memory.state import load_state
from app.memory.turns import ORIGIN_OF_OCCASION

UPLOAD_SETTING = "character_upload_max_bytes"
UPLOAD_FIELDS = ("file", "card", "picture")  # the multipart field an upload comes in


# --- the read models as the API shows them: a picture by its address --------------------------

Shown = TypeVar("Shown", Character, CharacterView)


def picture_url(character_id: str, version: str) -> str:
    """Where the page gets a character's picture; the version changes with the file, so a
    changed picture is fetched again."""
    return f"/api/characters/{character_id}/picture?v={version}"


def shown(character: Shown) -> Shown:
    """A catalog entry or the editor's view with its picture's address in place of the
    picture's version."""
    if not isinstance(character.picture, str):  # None (no picture) or left out
        return character
    return msgspec.structs.replace(character, picture=picture_url(character.id, character.picture))


def _characters(request: web.Request) -> Characters:
    return Characters(request.app[CHARACTER_STORE])


async def _run(request: web.Request, work: Callable[[Characters], Any]) -> Any:
    """`work` in a worker thread; what the characters layer refuses (`CharacterError`,
    `CardError`, `PictureError`, `UnknownCharacter`) is a `Refused`, answered as it is."""
    return await asyncio.to_thread(work, _characters(request))


# --- the list and the editor -------------------------------------------------------------------


async def list_characters(request: web.Request) -> web.Response:
    """`GET /api/characters` → `[{id, name, language, kind, picture, description?, greeting?,
    alternate_greetings?}]`: built-in, shared and the caller's own, no persona text. Read on a
    worker thread: after an edit the book reads the changed files again (only those)."""
    listed = await asyncio.to_thread(request.app[CHARACTERS].all, request[USER_ID])
    return compact([shown(character) for character in listed])


async def get_character(request: web.Request) -> web.Response:
    """`GET /api/characters/{cid}` → the editor's view (persona, greeting, baseline, …)."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    return compact(
        shown(await _run(request, lambda c: c.view(user_id, c.find(user_id, character_id))))
    )


async def post_character(request: web.Request) -> web.Response:
    """`POST /api/characters` → 201, a new character of the caller."""
    user_id = request[USER_ID]
    fields = await read_json(request, CharacterFields)
    return compact(
        shown(await _run(request, lambda c: c.view(user_id, c.create(user_id, fields)))),
        status=201,
    )


async def put_character(request: web.Request) -> web.Response:
    """`PUT /api/characters/{cid}` → 200; a built-in or shared one becomes the caller's own
    version of it."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    fields = await read_json(request, CharacterFields)
    return compact(
        shown(
            await _run(request, lambda c: c.view(user_id, c.update(user_id, character_id, fields)))
        )
    )


async def delete_character(request: web.Request) -> web.Response:
    """`DELETE /api/characters/{cid}` → 204 (the conversation is kept); 409 `not_own` for a
    built-in or shared character without the caller's own version."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    await _run(request, lambda c: c.delete(user_id, character_id))
    return web.Response(status=204)


async def post_copy(request: web.Request) -> web.Response:
    """`POST /api/characters/{cid}/copy` `{"id"?, "name"?}` → 201 the copy."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    fields = await read_json(request, CopyFields)
    return compact(
        shown(
            await _run(request, lambda c: c.view(user_id, c.copy(user_id, character_id, fields)))
        ),
        status=201,
    )


# --- pictures ------------------------------------------------------------------------------------


async def get_picture(request: web.Request) -> web.StreamResponse:
    """`GET /api/characters/{cid}/picture?size=48|96|192` → the picture, or a PNG thumbnail
    (the caller's characters only)."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    size = request.query.get("size")
    if size is not None and (not size.isdigit() or int(size) not in pictures.THUMBNAIL_SIZES):
        raise ApiError(
            400, "invalid_size", "size: one of " + ", ".join(map(str, pictures.THUMBNAIL_SIZES))
        )
    definition = request.app[CHARACTER_STORE].book.get(user_id, character_id)
    if definition is None:
        raise ApiError(404, "unknown_character", f"no character {character_id!r}")
    path = definition.picture
    if path is None or not path.is_file():
        raise ApiError(404, "no_picture", f"{character_id!r} has no picture")
    headers = (
        {"Cache-Control": "private, max-age=31536000"}
        if "v" in request.query
        else {"Cache-Control": "private, no-cache"}
    )
    if size is None:  # as stored: a PNG, or a shared definition's own JPEG or WebP
        return web.FileResponse(path, headers=headers)
    stamp = path.stat().st_mtime_ns
    body = await _run(request, lambda c: pictures.cached_thumbnail(str(path), stamp, int(size)))
    return web.Response(body=body, content_type="image/png", headers=headers)


async def put_picture(request: web.Request) -> web.Response:
    """`PUT /api/characters/{cid}/picture` (the image as the body, or multipart) → 200 the
    editor's view; the picture is stored as a PNG without the file's metadata."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    raw = await _upload(request, "a picture")
    return compact(
        shown(
            await _run(
                request, lambda c: c.view(user_id, c.set_picture(user_id, character_id, raw))
            )
        )
    )


async def delete_picture(request: web.Request) -> web.Response:
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    return compact(
        shown(
            await _run(
                request, lambda c: c.view(user_id, c.set_picture(user_id, character_id, None))
            )
        )
    )


# --- cards ---------------------------------------------------------------------------------------


async def post_import(request: web.Request) -> web.Response:
    """`POST /api/characters/import?id=` (a card as the body, or multipart `file`) → 201
    `{"character": …, "warnings": [str]}`; 400 `invalid_card` / `invalid_character`, 409
    `character_exists`, 413 over `character_upload_max_bytes` — nothing written."""
    user_id = request[USER_ID]
    wanted = request.query.get("id") or None
    raw = await _upload(request, "a character card")
    # Never in this process; a `CardError` comes back from the card process as itself.
    imported = await apart.read_card(raw, character_id=wanted)

    def work(c: Characters) -> dict[str, Any]:
        definition, warnings = c.import_read(user_id, imported)
        return {"character": shown(c.view(user_id, definition)), "warnings": warnings}

    return compact(await _run(request, work), status=201)


async def get_card(request: web.Request) -> web.Response:
    """`GET /api/characters/{cid}/card?spec=v2|v3&format=png|json` → the card as a download."""
    user_id, character_id = request[USER_ID], request.match_info["cid"]
    spec, fmt = request.query.get("spec", "v3"), request.query.get("format", "png")
    export = await _run(request, lambda c: c.export_card(user_id, character_id, spec, fmt))
    return web.Response(
        body=export.body,
        content_type=export.content_type,
        headers={"Content-Disposition": f'attachment; filename="{export.file_name}"'},
    )


async def _upload(request: web.Request, noun: str) -> bytes:
    """The uploaded file (the body, or a multipart form's file field), bounded by
    `character_upload_max_bytes`."""
    upload = await read_upload(
        request,
        request.app[SETTINGS].character_upload_max_bytes,
        UPLOAD_SETTING,
        noun,
        UPLOAD_FIELDS,
    )
    return upload.data


# --- a pair's session and state --------------------------------------------------------------


async def get_session(request: web.Request) -> web.Response:
    """`GET /api/characters/{cid}/session` → `{"turns": [Turn…], "summary": str|null,
    "origins": {herkunft: origin}}`, turns with the seed's German field names; `origins` is
    the server's one table from a stored turn's `herkunft` to the `origin` a live
    `character_response` names, so the UI shows a turn from the session as it showed it live
    and keeps no copy of the table."""
    character_id = known_character(request)
    memory = request.app[SESSION]
    turns, summary = await memory.retrieve(request[USER_ID], character_id)
    return compact({"turns": turns, "summary": summary, "origins": ORIGIN_OF_OCCASION})


async def delete_session(request: web.Request) -> web.Response:
    """`DELETE /api/characters/{cid}/session` → 204. Open turns and queued messages of the
    pair end with `turn_failed` (reason `session_reset`), never silently."""
    character_id = known_character(request)
    await request.app[RUNTIME].reset_pair(request[USER_ID], character_id)
    return web.Response(status=204)


async def get_state(request: web.Request) -> web.Response:
    """`GET /api/characters/{cid}/state` → the `nova_state` fields."""
    character_id = known_character(request)
    return compact(await load_state(request.app[REDIS], request[USER_ID], character_id))


def setup(app: web.Application) -> None:
    app.router.add_get("/api/characters", list_characters)
    app.router.add_post("/api/characters", post_character)
    # Uploads may be larger than the app's client_max_size: `_upload` reads them itself,
    # bounded by character_upload_max_bytes.
    app.router.add_post("/api/characters/import", post_import)
    app.router.add_get("/api/characters/{cid}", get_character)
    app.router.add_put("/api/characters/{cid}", put_character)
    app.router.add_delete("/api/characters/{cid}", delete_character)
    app.router.add_post("/api/characters/{cid}/copy", post_copy)
    app.router.add_get("/api/characters/{cid}/picture", get_picture)
    app.router.add_put("/api/characters/{cid}/picture", put_picture)
    app.router.add_delete("/api/characters/{cid}/picture", delete_picture)
    app.router.add_get("/api/characters/{cid}/card", get_card)
    app.router.add_get("/api/characters/{cid}/session", get_session)
    app.router.add_delete("/api/characters/{cid}/session", delete_session)
    app.router.add_get("/api/characters/{cid}/state", get_state)
