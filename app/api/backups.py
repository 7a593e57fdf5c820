"""Backups, exports and imports over HTTP (SPEC §8a).

- `GET /api/backups` (admin): the backups in the data dir, newest first, with where they are
  and the retention settings.
- `POST /api/backups` (admin): take one now → `201` with its summary; `409 backup_running`
  while one is being taken. A backup holds every user's data, so in headless mode only the
  admin (`local`) may take or list them; it never holds accounts (a full backup with
  accounts is the command line's `novaberg backup --include-accounts`).
- `GET /api/exports/{kind}?character=&from=&to=&format=md|json`: the caller's own data as a
  download (`kind`: a registered exporter, e.g. `chat`), streamed: each chunk is read and
  serialised on a reader thread and written as it comes (chunked transfer), so neither the
  event loop nor the memory carries the export's size.
- `POST /api/imports` (body: a JSON export): into the caller's own data, without duplicates
  → `{kind, imported, skipped}`; the body is read in pieces and decoded off the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from app.api.app_keys import BACKUPS, CHARACTERS, DB, SETTINGS
from app.api.errors import ApiError
from app.api.llm import require_admin
from app.api.middleware import USER_ID
from app.backup.exports import ExportError, make_query, stream
from app.backup.registry import EXPORTERS, exporter_for_document, exporter_named
from app.backup.service import BackupBusy
from app.core.clock import zone_named

EXPORT_FORMATS = ("md", "json")
READ_PIECE = 1 << 16  # an import's body is read in pieces of this size,
YIELD_EVERY = 1 << 20  # and the loop gets a turn after each megabyte


async def list_backups(request: web.Request) -> web.Response:
    require_admin(request)
    service = request.app[BACKUPS]
    settings = request.app[SETTINGS]
    return web.json_response({
        "directory": str(service.directory),
        "keep": settings.backup_keep,
        "daily": settings.backup_daily,
        "backups": [backup.summary() for backup in await service.list()],
    })


async def post_backup(request: web.Request) -> web.Response:
    require_admin(request)
    try:
        backup = await request.app[BACKUPS].create(reason="api")
    except BackupBusy as exc:
        raise ApiError(409, "backup_running", str(exc)) from None
    return web.json_response(backup.summary(), status=201)


async def get_export(request: web.Request) -> web.Response:
    kind = request.match_info["kind"]
    fmt = request.query.get("format", "json")
    if fmt not in EXPORT_FORMATS:
        raise ApiError(400, "invalid_format", f"format {fmt!r}: use md or json")
    character = request.query.get("character") or None
    if character is not None and request.app[CHARACTERS].get(character) is None:
        raise ApiError(404, "unknown_character", f"no character {character!r}")
    zone = zone_named(request.app[SETTINGS].timezone)
    try:
        exporter = exporter_named(kind)
        query = make_query(request[USER_ID], character, request.query.get("from"),
                           request.query.get("to"), zone)
    except ExportError as exc:
        status = 404 if kind not in _kinds() else 400
        raise ApiError(status, "invalid_export", str(exc)) from None
    stem = "-".join(p for p in ("novaberg", kind, character, query.start, query.end) if p)
    chunks = request.app[DB].read_stream(lambda conn: stream(exporter, conn, query, fmt))
    async with contextlib.aclosing(chunks):
        first = await anext(chunks, b"")  # a failing query still answers in the error shape
        response = web.StreamResponse(headers={
            "Content-Disposition": f'attachment; filename="{stem}.{fmt}"'})
        response.content_type = "text/markdown" if fmt == "md" else "application/json"
        response.charset = "utf-8"
        response.enable_chunked_encoding()
        await response.prepare(request)
        await response.write(first)
        async for chunk in chunks:
            await response.write(chunk)
    await response.write_eof()
    return response


def _kinds() -> list[str]:
    return list(EXPORTERS)


async def post_import(request: web.Request) -> web.Response:
    limit = request.app[SETTINGS].import_max_bytes
    raw = await _read_bounded(request, limit)
    user_id = request[USER_ID]
    try:
        # Reading the head decodes the whole document: tens of megabytes, not for the loop.
        exporter = await asyncio.to_thread(exporter_for_document, raw)
        result = await request.app[DB].execute_write_fn(
            lambda conn: exporter.import_document(conn, user_id, raw))
    except ExportError as exc:
        raise ApiError(400, "invalid_import", str(exc)) from None
    return web.json_response(result.as_dict())


async def _read_bounded(request: web.Request, limit: int) -> bytearray:
    """The body, or 413 as soon as it is longer than `limit` (nothing more is read). Grown
    piece by piece: joining tens of megabytes at the end would hold the loop."""
    too_large = ApiError(413, "too_large", f"an import may have at most {limit} bytes "
                         "(setting import_max_bytes)")
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    body = bytearray()
    while chunk := await request.content.read(READ_PIECE):
        if len(body) + len(chunk) > limit:
            raise too_large
        body += chunk
        if len(body) % YIELD_EVERY < len(chunk):
            # A read of what is buffered already returns at once: without a pause here, a
            # fast client's 50 MB would be taken in one step of the loop.
            await asyncio.sleep(0)
    return body


def setup(app: web.Application) -> None:
    app.router.add_get("/api/backups", list_backups)
    app.router.add_post("/api/backups", post_backup)
    app.router.add_get("/api/exports/{kind}", get_export)
    # The body may be larger than the app's client_max_size: the handler reads it itself,
    # bounded by import_max_bytes.
    app.router.add_post("/api/imports", post_import)
