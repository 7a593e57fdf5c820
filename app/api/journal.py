"""`/api/journal/…` (design §9): days, imports (a day's conversation; a diary the user already
has), generation jobs, drafts, entries, their photos, trash, export.

Handlers validate, call the journal (`app.journal`) and answer; they build no prompt.

One module: the journal's routes, one short handler each over `app.journal`.
"""

from __future__ import annotations

import asyncio
import calendar
import datetime as dt
import functools
import logging
import re
import time
from typing import Any

import msgspec
from aiohttp import web

from app.api.app_keys import DB, JOURNAL, JOURNAL_STORE, MEDIA, PROFILES, SETTINGS
from app.api.downloads import streamed_download
from app.api.errors import ApiError, Handler
from app.api.journal_views import asset_out, day_out, entry_out
from app.api.middleware import USER_ID
from app.api.validation import (
    bounded_text,
    query_limit,
    read_body,
    read_json,
    read_upload,
    request_language,
)
from app.api.wire import answer
from app.backup.diary_formats import Limits
from app.backup.diary_formats import read_upload as read_diary
from app.backup.diary_import import attach_photos, check_photo_budget, import_diary
from app.backup.exports import ExportError, ImportTarget
from app.core.clock import calendar_date, read_date, read_moment, zone_named
from app.core.log import fields
from app.journal import export
from app.journal.media import THUMB_CONTENT_TYPE, remove_files
from app.journal.store import ImportedMessage

log = logging.getLogger(__name__)
_MONTH = re.compile(r"(\d{4})-(\d{2})", re.ASCII)  # not other scripts' digits


class ImportMessageIn(msgspec.Struct, forbid_unknown_fields=True):
    role: str
    text: str
    at: str | float | None = None


class ImportIn(msgspec.Struct, forbid_unknown_fields=True):
    date: str
    messages: list[ImportMessageIn]


class DraftRequestIn(msgspec.Struct, forbid_unknown_fields=True):
    conversation_ids: list[str] | None = None
    # Seed 004: off by default; on, the draft revises the stored entry version (a leftover
    # draft only when there is no entry).
    include_existing: bool = False
    language: str | None = None


class EntryIn(msgspec.Struct, forbid_unknown_fields=True):
    date: str
    text: str
    draft_id: str | None = None


class EntryTextIn(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    draft_id: str | None = None  # a draft of the day taken over as the next version


class RestoreIn(msgspec.Struct, forbid_unknown_fields=True):
    version_id: str


def valid_date(raw: str) -> str:
    """A calendar date `YYYY-MM-DD` that exists; 400 `invalid_date` otherwise."""
    try:
        return read_date(raw)
    except ValueError as exc:
        raise ApiError(400, "invalid_date", str(exc)) from None


def valid_month(raw: str) -> tuple[str, str]:
    """The first and last date of a month `YYYY-MM`; 400 `invalid_month` otherwise."""
    match = _MONTH.fullmatch(raw)
    if match is None or not 1 <= int(match[2]) <= 12 or int(match[1]) < 1:
        raise ApiError(400, "invalid_month", f"{raw!r} is not a month (YYYY-MM)")
    year, month = int(match[1]), int(match[2])
    days = calendar.monthrange(year, month)[1]
    return dt.date(year, month, 1).isoformat(), dt.date(year, month, days).isoformat()


def _moment(raw: str | float, index: int) -> float:
    try:
        return read_moment(raw)
    except ValueError as exc:
        raise ApiError(400, "invalid_at", f"messages[{index}].at: {exc}") from None


def _text(request: web.Request, raw: str, noun: str) -> str:
    return bounded_text(
        raw,
        limit=request.app[SETTINGS].max_message_chars,
        noun=noun,
        empty_code="empty_text",
        long_code="text_too_long",
        user_id=request[USER_ID],
    )


# --- days and imports ---------------------------------------------------------------------------


DAYS_DEFAULT_LIMIT = 366  # a year of days: what a client that asks for no page sees at once
DAYS_MAX_LIMIT = 1000


async def list_days(request: web.Request) -> web.Response:
    """`GET /api/journal/days?limit=&before=<date>` → the newest `limit` days before `before`
    (newest first, a JSON list as before); a `Link: <…>; rel="next"` header when there are
    older days."""
    limit = query_limit(request, DAYS_DEFAULT_LIMIT, DAYS_MAX_LIMIT)
    before = request.query.get("before")
    if before is not None:
        before = valid_date(before)
    days, older = await request.app[JOURNAL_STORE].day_page(
        request[USER_ID], before=before, limit=limit
    )
    headers: dict[str, str] = {}
    if older is not None:
        headers["Link"] = f'</api/journal/days?before={older}&limit={limit}>; rel="next"'
    return answer([day_out(day) for day in days], headers=headers)


async def get_month(request: web.Request) -> web.Response:
    """The calendar's month: the days of `month` with messages, an entry or a draft (oldest
    first), today in the user's zone (setting `timezone`), and the newest day with anything
    at all (`latest`, where the page opens)."""
    month = request.match_info["month"]
    start, end = valid_month(month)
    store, user_id = request.app[JOURNAL_STORE], request[USER_ID]
    days = await store.days(user_id, start, end)
    today = calendar_date(time.time(), zone_named(request.app[SETTINGS].timezone))
    return answer(
        {
            "month": month,
            "today": today,
            "days": [day_out(day) for day in days[::-1]],
            "latest": await store.latest_day(user_id),
        }
    )


async def get_day(request: web.Request) -> web.Response:
    date = valid_date(request.match_info["date"])
    store, user_id = request.app[JOURNAL_STORE], request[USER_ID]
    conversations = await store.conversations(user_id, date)
    entry = await store.day_entry(user_id, date)
    return answer(
        {
            "date": date,
            "conversations": [c.as_dict() for c in conversations],
            "entry": entry_out(entry) if entry is not None else None,
            "drafts": await store.drafts_of_day(user_id, date),
        }
    )


async def import_day(request: web.Request) -> web.Response:
    body = await read_json(request, ImportIn)
    date = valid_date(body.date)
    settings = request.app[SETTINGS]
    if not body.messages:
        raise ApiError(400, "empty_import", "an import needs at least one message")
    if len(body.messages) > settings.journal_day_max_messages:
        raise ApiError(
            413,
            "import_too_large",
            f"{len(body.messages)} messages; a day takes at most "
            f"{settings.journal_day_max_messages} (journal_day_max_messages)",
        )
    zone = zone_named(settings.timezone)
    messages = []
    for index, message in enumerate(body.messages):
        if message.role not in ("user", "assistant"):
            raise ApiError(
                400,
                "invalid_role",
                f"messages[{index}].role {message.role!r} is not user or assistant",
            )
        text = _text(request, message.text, f"text of messages[{index}]")
        at = _moment(message.at, index) if message.at is not None else None
        if at is not None and calendar_date(at, zone) != date:
            raise ApiError(
                400,
                "invalid_at",
                f"messages[{index}].at falls on "
                f"{calendar_date(at, zone)} in your time zone, not on {date}",
            )
        messages.append(ImportedMessage(message.role, text, at))
    conversation_id, ids = await request.app[JOURNAL_STORE].import_conversation(
        request[USER_ID], date, messages
    )
    return web.json_response({"conversation_id": conversation_id, "message_ids": ids}, status=201)


async def import_diary_file(request: web.Request) -> web.Response:
    """A diary the user already has (body: Day One's JSON or zip, or a zip of Markdown files;
    `?name=` the file's name, which gives a lone Markdown file its day) → entries, all or
    nothing: `{kind, source, items, imported, skipped, day_has_entry, entries, photos,
    notes}`; 400 `invalid_diary` naming the first bad entry, 413 `import_too_large` when
    its photos' headers declare more than the import's budget; nothing written."""
    settings = request.app[SETTINGS]
    raw = await read_body(request, settings.import_max_bytes, "import_max_bytes")
    limits = Limits(settings.import_max_bytes, zone_named(settings.timezone))
    target = ImportTarget(request[USER_ID], ())
    try:
        diary = await asyncio.to_thread(read_diary, raw, limits, request.query.get("name", ""))
        await asyncio.to_thread(check_photo_budget, diary, target.user_id)
        result = await request.app[DB].execute_write_fn(
            lambda conn: import_diary(conn, target, diary, max_chars=settings.max_message_chars)
        )
    except ExportError as exc:
        raise ApiError(400, "invalid_diary", str(exc)) from None
    media = request.app[MEDIA]
    await attach_photos(result, diary, functools.partial(media.add_media, target.user_id))
    log.info(
        "diary imported",
        extra=fields(
            user_id=target.user_id,
            source=diary.source,
            items=result.items,
            imported=result.imported,
            skipped=result.skipped,
            entries=len(result.entries),
            day_has_entry=len(result.day_has_entry),
            photos_imported=result.photos.imported,
            photos_not_imported=result.photos.not_imported,
        ),
    )
    return answer(result.answer(request_language(request)))


# --- generation ---------------------------------------------------------------------------------


async def request_draft(request: web.Request) -> web.Response:
    date = valid_date(request.match_info["date"])
    body = await read_json(request, DraftRequestIn, empty=DraftRequestIn())
    user_id = request[USER_ID]
    conversations = await request.app[JOURNAL_STORE].conversations(user_id, date)
    if body.conversation_ids is not None:
        known = {c.conversation_id for c in conversations}
        unknown = [c for c in body.conversation_ids if c not in known]
        if unknown or not body.conversation_ids:
            raise ApiError(
                400,
                "unknown_conversation",
                f"not conversations of {date}: {unknown or 'none selected'}",
            )
        chosen = set(body.conversation_ids)
        conversations = [c for c in conversations if c.conversation_id in chosen]
    # Conversations without user text (`NoUserSources`) are answered as they are refused.
    job_id = await request.app[JOURNAL].start(
        user_id,
        date,
        conversations,
        include_existing=body.include_existing,
        language=request_language(request, body.language),
    )
    return web.json_response({"job_id": job_id}, status=202)


async def get_job(request: web.Request) -> web.Response:
    return answer(
        await request.app[JOURNAL_STORE].job(request[USER_ID], request.match_info["job_id"])
    )


async def get_draft(request: web.Request) -> web.Response:
    return answer(
        await request.app[JOURNAL_STORE].draft(request[USER_ID], request.match_info["draft_id"])
    )


# --- entries ------------------------------------------------------------------------------------


async def _entry_response(request: web.Request, entry_id: str, status: int = 200) -> web.Response:
    return answer(
        entry_out(await request.app[JOURNAL_STORE].entry(request[USER_ID], entry_id)), status=status
    )


async def _profile_evidence(request: web.Request, entry_id: str) -> None:
    """The writing profile's save-time triggers (seed 004 §13) for the entry just saved. The
    entry is saved whatever happens here: a failure is logged, not answered."""
    try:
        await request.app[PROFILES].on_entry_saved(request[USER_ID], entry_id)
    except Exception:
        log.exception(
            "profile evidence at save failed; the entry is saved",
            extra=fields(user_id=request[USER_ID], entry_id=entry_id),
        )


async def create_entry(request: web.Request) -> web.Response:
    body = await read_json(request, EntryIn)
    date = valid_date(body.date)
    text = _text(request, body.text, "entry text")
    entry_id = await request.app[JOURNAL_STORE].create_entry(
        request[USER_ID], date, text, body.draft_id
    )
    await _profile_evidence(request, entry_id)
    return await _entry_response(request, entry_id, 201)


async def get_entry(request: web.Request) -> web.Response:
    return await _entry_response(request, request.match_info["entry_id"])


async def edit_entry(request: web.Request) -> web.Response:
    body = await read_json(request, EntryTextIn)
    entry_id = request.match_info["entry_id"]
    await request.app[JOURNAL_STORE].edit_entry(
        request[USER_ID], entry_id, _text(request, body.text, "entry text"), body.draft_id
    )
    await _profile_evidence(request, entry_id)
    return await _entry_response(request, entry_id)


async def restore_entry(request: web.Request) -> web.Response:
    body = await read_json(request, RestoreIn)
    entry_id = request.match_info["entry_id"]
    await request.app[JOURNAL_STORE].restore_entry(request[USER_ID], entry_id, body.version_id)
    return await _entry_response(request, entry_id)


async def delete_entry(request: web.Request) -> web.Response:
    await request.app[JOURNAL_STORE].delete_entry(request[USER_ID], request.match_info["entry_id"])
    return web.Response(status=204)


async def undelete_entry(request: web.Request) -> web.Response:
    entry_id = request.match_info["entry_id"]
    await request.app[JOURNAL_STORE].undelete_entry(request[USER_ID], entry_id)
    return await _entry_response(request, entry_id)


async def list_trash(request: web.Request) -> web.Response:
    entries = await request.app[JOURNAL_STORE].entries(request[USER_ID], deleted=True)
    return answer([entry_out(entry) for entry in entries])


async def purge_entry(request: web.Request) -> web.Response:
    files = await request.app[JOURNAL_STORE].purge_entry(
        request[USER_ID], request.match_info["entry_id"]
    )
    remove_files(request.app[SETTINGS].files_path, files)
    return web.Response(status=204)


# --- photos -------------------------------------------------------------------------------------

MEDIA_SETTING = "media_max_bytes"
MEDIA_FIELDS = ("file", "photo")  # the multipart field a photo comes in
# A photo is the user's own: never cached by anyone else, never read as anything but its kind.
_MEDIA_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "private, max-age=3600",
    "Content-Security-Policy": "default-src 'none'; sandbox",
}


async def add_media(request: web.Request) -> web.Response:
    """`POST /api/journal/entries/{id}/media?name=` (the photo as the body, or multipart
    `file`, whose file name is the default name) → 201 the photo."""
    settings = request.app[SETTINGS]
    upload = await read_upload(
        request, settings.media_max_bytes, MEDIA_SETTING, "a photo", MEDIA_FIELDS
    )
    name = request.query.get("name") or upload.file_name or ""
    # A photo refused (`MediaRefused`) is answered as it is.
    asset = await request.app[MEDIA].add_media(
        request[USER_ID], request.match_info["entry_id"], name, upload.data
    )
    return answer(asset_out(asset.view()), status=201)


async def get_media(request: web.Request) -> web.StreamResponse:
    return await _media_file(request, thumb=False)


async def get_media_thumb(request: web.Request) -> web.StreamResponse:
    return await _media_file(request, thumb=True)


async def _media_file(request: web.Request, *, thumb: bool) -> web.StreamResponse:
    """The owner's photo (its content type from the decoded kind) or thumbnail (WebP);
    another user's is 404 like one that does not exist."""
    asset, path = await request.app[MEDIA].asset_file(
        request[USER_ID], request.match_info["asset_id"], thumb=thumb
    )
    content_type = THUMB_CONTENT_TYPE if thumb else asset.content_type
    body = await asyncio.to_thread(path.read_bytes)
    return web.Response(body=body, content_type=content_type, headers=_MEDIA_HEADERS)


async def delete_media(request: web.Request) -> web.Response:
    await request.app[MEDIA].delete_media(request[USER_ID], request.match_info["asset_id"])
    return web.Response(status=204)


async def export_entries(request: web.Request) -> web.StreamResponse:
    """`GET /api/journal/export?format=md|json`: streamed, chunk by chunk off the loop."""
    fmt: Any = request.query.get("format", "md")
    if fmt not in ("md", "json"):
        raise ApiError(400, "invalid_format", "format must be md or json")
    user_id = request[USER_ID]
    chunks = request.app[DB].read_stream(lambda conn: export.chunks(conn, user_id, fmt))
    content_type = "application/json" if fmt == "json" else "text/markdown"
    return await streamed_download(request, chunks, f"journal.{fmt}", content_type)


def setup(app: web.Application) -> None:
    routes: list[tuple[str, str, Handler]] = [
        ("GET", "/api/journal/days", list_days),
        ("GET", "/api/journal/days/{date}", get_day),
        ("GET", "/api/journal/months/{month}", get_month),
        ("POST", "/api/journal/days/{date}/drafts", request_draft),
        ("POST", "/api/journal/import", import_day),
        ("POST", "/api/journal/import/diary", import_diary_file),
        ("GET", "/api/journal/jobs/{job_id}", get_job),
        ("GET", "/api/journal/drafts/{draft_id}", get_draft),
        ("POST", "/api/journal/entries", create_entry),
        ("GET", "/api/journal/entries/{entry_id}", get_entry),
        ("PUT", "/api/journal/entries/{entry_id}", edit_entry),
        ("DELETE", "/api/journal/entries/{entry_id}", delete_entry),
        ("POST", "/api/journal/entries/{entry_id}/restore", restore_entry),
        ("POST", "/api/journal/entries/{entry_id}/undelete", undelete_entry),
        ("GET", "/api/journal/trash", list_trash),
        ("DELETE", "/api/journal/trash/{entry_id}", purge_entry),
        # A photo may be larger than the app's client_max_size: `read_upload` reads it,
        # bounded by media_max_bytes.
        ("POST", "/api/journal/entries/{entry_id}/media", add_media),
        ("GET", "/api/journal/media/{asset_id}", get_media),
        ("GET", "/api/journal/media/{asset_id}/thumb", get_media_thumb),
        ("DELETE", "/api/journal/media/{asset_id}", delete_media),
        ("GET", "/api/journal/export", export_entries),
    ]
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
