"""Backups, exports and imports over HTTP (design §8a).

- `GET /api/backups` (admin): the backups in the data dir, newest first, with where they are,
  the command line that restores each (`restore_command`, with this app's data dir) and the
  retention settings.
- `POST /api/backups` (admin): take one now → `201` with its summary; `409 backup_running`
  while one is being taken. A backup holds every user's data, so in headless mode only the
  admin (`local`) may take or list them; it never holds accounts (a full backup with
  accounts is the command line's `novaberg backup --include-accounts`).
- `GET /api/exports/{kind}?character=&from=&to=&format=md|json&lang=&per=`: the caller's
  own data as a download (`kind`: a registered exporter, e.g. `chat`); `lang` (de, en) for
  the words of a Markdown export (default: the exporter's neutral form); `per=entry`: one
  file per item in a zip, named as the CLI's `--out FOLDER` names them (the journal); a chat
  export also carries the lists and reminders kept with the character, or with every character.
- `POST /api/imports` (body: a JSON export): into the caller's own data, without duplicates
  → `{kind, imported, skipped}` (a chat import adds `parts`: per part — messages, lists,
  reminders — what was imported and skipped); the body is read in pieces and decoded off
  the event loop, item by item.
- Every export is streamed: each chunk is read and serialised on a reader thread and written
  as it comes (chunked transfer; a zip too), so neither the event loop nor the memory
  carries the export's size.
"""

from __future__ import annotations

import asyncio
import functools
import logging

import msgspec
from aiohttp import web

from app.api.access import require_admin
from app.api.app_keys import BACKUPS, CHARACTERS, DB, REDIS, SETTINGS
from app.api.downloads import streamed_download
from app.api.errors import ApiError
from app.api.middleware import USER_ID
from app.api.validation import read_body
from app.api.wire import answer
from app.backup.archive import BackupSummary
from app.backup.chat_export import ChatExporter, with_parts
from app.backup.exports import (
    ExportError,
    ExportFormat,
    ImportTarget,
    make_query,
    stream,
    stream_zip,
)
from app.backup.registry import EXPORTERS, exporter_for_document, exporter_named
from app.core.clock import zone_named
from app.core.i18n import LANGUAGES
from app.storage.datadir import restore_command

log = logging.getLogger(__name__)

EXPORT_FORMATS: tuple[ExportFormat, ...] = ("md", "json")


class BackupOut(BackupSummary, frozen=True):
    """A backup as the list shows it: with the command line that restores it here."""

    restore_command: str


async def list_backups(request: web.Request) -> web.Response:
    require_admin(request)
    service = request.app[BACKUPS]
    settings = request.app[SETTINGS]
    return answer(
        {
            "directory": str(service.directory),
            "data_dir": str(settings.data_path),
            "keep": settings.backup_keep,
            "daily": settings.backup_daily,
            "backups": [
                BackupOut(
                    **msgspec.structs.asdict(backup.summary()),
                    restore_command=restore_command(settings.data_path, backup.path),
                )
                for backup in await service.list()
            ],
        }
    )


async def post_backup(request: web.Request) -> web.Response:
    require_admin(request)
    # One already being taken is refused as it is (`BackupBusy`: 409 `backup_running`).
    backup = await request.app[BACKUPS].create(reason="api")
    return answer(backup.summary(), status=201)


async def get_export(request: web.Request) -> web.StreamResponse:
    kind = request.match_info["kind"]
    fmt = request.query.get("format", "json")
    if fmt not in EXPORT_FORMATS:
        raise ApiError(400, "invalid_format", f"format {fmt!r}: use md or json")
    character = request.query.get("character") or None
    if character is not None and request.app[CHARACTERS].get(request[USER_ID], character) is None:
        raise ApiError(404, "unknown_character", f"no character {character!r}")
    zone = zone_named(request.app[SETTINGS].timezone)
    try:
        exporter = exporter_named(kind)
        query = make_query(
            request[USER_ID], character, request.query.get("from"), request.query.get("to"), zone
        )
    except ExportError as exc:
        status = 404 if kind not in _kinds() else 400
        raise ApiError(status, "invalid_export", str(exc)) from None
    language = request.query.get("lang") or None
    if language is not None and language not in LANGUAGES:
        raise ApiError(400, "invalid_language", f"lang {language!r}: use de or en")
    per = request.query.get("per") or None
    split = getattr(exporter, "files", None) if per is not None else None
    if per is not None and (per != "entry" or split is None):
        raise ApiError(
            400, "invalid_export", f"per={per!r}: one file per entry is offered for the journal"
        )
    kept = None
    if isinstance(exporter, ChatExporter):
        redis = request.app[REDIS]
        defined = [c.id for c in request.app[CHARACTERS].all(request[USER_ID])]
        kept = await exporter.collect_kept(
            redis, query, await exporter.kept_characters(redis, query, defined)
        )
    stem = "-".join(p for p in ("novaberg", kind, character, query.start, query.end) if p)
    db = request.app[DB]
    if split is not None:
        files = functools.partial(
            split,
            query=query,
            fmt=fmt,
            language=language,
            data_path=request.app[SETTINGS].files_path,
        )
        return await streamed_download(
            request,
            db.read_stream(functools.partial(stream_zip, files)),
            f"{stem}.zip",
            "application/zip",
        )
    chunks = db.read_stream(lambda conn: stream(exporter, conn, query, fmt, language, kept))
    return await streamed_download(
        request, chunks, f"{stem}.{fmt}", "text/markdown" if fmt == "md" else "application/json"
    )


def _kinds() -> list[str]:
    return list(EXPORTERS)


async def post_import(request: web.Request) -> web.Response:
    settings = request.app[SETTINGS]
    raw = await read_body(request, settings.import_max_bytes, "import_max_bytes")
    target = ImportTarget(
        request[USER_ID], {c.id for c in request.app[CHARACTERS].all(request[USER_ID])}
    )
    try:
        # Reading the head goes over the whole document, and the lists and reminders of a
        # chat export are decoded before anything is written: tens of megabytes, off the loop.
        exporter = await asyncio.to_thread(exporter_for_document, raw)
        chat = exporter if isinstance(exporter, ChatExporter) else None
        kept = await asyncio.to_thread(chat.read_kept, raw, target) if chat is not None else None
        result = await request.app[DB].execute_write_fn(
            lambda conn: exporter.import_document(conn, target, raw)
        )
    except ExportError as exc:
        raise ApiError(400, "invalid_import", str(exc)) from None
    if chat is None or kept is None:
        return answer(result)
    return answer(
        with_parts(result, await chat.import_kept(request.app[REDIS], request[USER_ID], kept))
    )


def setup(app: web.Application) -> None:
    app.router.add_get("/api/backups", list_backups)
    app.router.add_post("/api/backups", post_backup)
    app.router.add_get("/api/exports/{kind}", get_export)
    # The body may be larger than the app's client_max_size: the handler reads it itself,
    # bounded by import_max_bytes.
    app.router.add_post("/api/imports", post_import)
