"""Backups, exports and imports over HTTP (SPEC §8a).

- `GET /api/backups` (admin): the backups in the data dir, newest first, with where they are
  and the retention settings.
- `POST /api/backups` (admin): take one now → `201` with its summary; `409 backup_running`
  while one is being taken. A backup holds every user's data, so in headless mode only the
  admin (`local`) may take or list them; it never holds accounts (a full backup with
  accounts is the command line's `novaberg backup --include-accounts`).
- `GET /api/exports/{kind}?character=&from=&to=&format=md|json`: the caller's own data as a
  download (`kind`: a registered exporter, e.g. `chat`).
- `POST /api/imports` (body: a JSON export): into the caller's own data, without duplicates
  → `{kind, imported, skipped}`.
"""

from __future__ import annotations

import json

from aiohttp import web

from app.api.app_keys import BACKUPS, CHARACTERS, DB, SETTINGS
from app.api.errors import ApiError
from app.api.llm import require_admin
from app.api.middleware import USER_ID
from app.api.validation import read_bounded
from app.backup.exports import ExportError, make_query
from app.backup.registry import EXPORTERS, exporter_for_document, exporter_named
from app.backup.service import BackupBusy
from app.core.clock import zone_named

EXPORT_FORMATS = ("md", "json")


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
    if character is not None and \
            request.app[CHARACTERS].get(request[USER_ID], character) is None:
        raise ApiError(404, "unknown_character", f"no character {character!r}")
    zone = zone_named(request.app[SETTINGS].timezone)
    try:
        exporter = exporter_named(kind)
        query = make_query(request[USER_ID], character, request.query.get("from"),
                           request.query.get("to"), zone)
    except ExportError as exc:
        status = 404 if kind not in _kinds() else 400
        raise ApiError(status, "invalid_export", str(exc)) from None
    document = await request.app[DB].execute_fn(lambda conn: exporter.collect(conn, query))
    stem = "-".join(p for p in ("novaberg", kind, character, query.start, query.end) if p)
    if fmt == "md":
        body = exporter.markdown(document, zone).encode()
        content_type = "text/markdown"
    else:
        body = json.dumps(document, ensure_ascii=False, indent=1).encode()
        content_type = "application/json"
    return web.Response(body=body, content_type=content_type, charset="utf-8", headers={
        "Content-Disposition": f'attachment; filename="{stem}.{fmt}"'})


def _kinds() -> list[str]:
    return list(EXPORTERS)


async def post_import(request: web.Request) -> web.Response:
    limit = request.app[SETTINGS].import_max_bytes
    raw = await read_bounded(request, limit, setting="import_max_bytes", noun="an import")
    user_id = request[USER_ID]
    try:
        exporter = exporter_for_document(raw)
        result = await request.app[DB].execute_write_fn(
            lambda conn: exporter.import_document(conn, user_id, raw))
    except ExportError as exc:
        raise ApiError(400, "invalid_import", str(exc)) from None
    return web.json_response(result.as_dict())


def setup(app: web.Application) -> None:
    app.router.add_get("/api/backups", list_backups)
    app.router.add_post("/api/backups", post_backup)
    app.router.add_get("/api/exports/{kind}", get_export)
    # The body may be larger than the app's client_max_size: the handler reads it itself,
    # bounded by import_max_bytes.
    app.router.add_post("/api/imports", post_import)
