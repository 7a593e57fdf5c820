"""Reading request bodies: the one reader of every body, and the one place that turns a body
that cannot be read into the design §9 error shape (never a 500, whatever the bytes)."""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
import zlib
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import BodyPartReader, web

from app.api.errors import ApiError
from app.core import json_input
from app.core.i18n import language_of
from app.core.log import fields
from app.core.text import is_blank

T = TypeVar("T")
_NO_DEFAULT: Any = object()
READ_PIECE = 1 << 16  # a large body is read in pieces of this size,
YIELD_EVERY = 1 << 20  # and the loop gets a turn after each megabyte
log = logging.getLogger(__name__)


async def read_json(request: web.Request, type_: type[T], *, empty: T = _NO_DEFAULT) -> T:
    """Decode and validate the body as `type_` (a msgspec Struct forbidding unknown fields,
    or `Any`: any JSON value, nested at most `json_input.MAX_DEPTH` levels). A body of only
    whitespace is `empty` where one is given.

    Invalid JSON (invalid UTF-8, nesting too deep for the decoder) or wrong types → 400
    `invalid_request`; a body over the app's `client_max_size` → 413 (raised by aiohttp,
    shaped by the error middleware).
    """
    body = await read_body(request)
    if empty is not _NO_DEFAULT and not body.strip():
        return empty
    try:
        return json_input.decode(body, type_)
    except json_input.WrongShape as exc:
        raise ApiError(400, "invalid_request", f"invalid body: {exc}") from None
    except json_input.NotJson as exc:
        raise ApiError(400, "invalid_request", f"body is not valid JSON: {exc}") from None


async def read_body(
    request: web.Request, limit: int | None = None, setting: str | None = None
) -> bytes:
    """The body as bytes, its `Content-Encoding` undone (`decoded_body`). `limit`: a bound of
    its own instead of the app's `client_max_size` (an import may be larger; `setting` names
    it in the answer) — 413 as soon as more has come, nothing more is read."""
    if limit is None:
        return decoded_body(request, await request.read())
    too_large = ApiError(
        413,
        "too_large",
        f"the body may have at most {limit} bytes" + (f" (setting {setting})" if setting else ""),
    )
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    parts, size = [], 0
    while chunk := await request.content.read(READ_PIECE):
        size += len(chunk)
        if size > limit:
            raise too_large
        parts.append(chunk)
        if size % YIELD_EVERY < len(chunk):
            # A read of what is buffered already returns at once: without a pause here, a
            # fast client's 50 MB would be taken in one step of the loop.
            await asyncio.sleep(0)
    # Joining and inflating up to `limit` (tens of MB) take the loop too long: on a thread.
    return await asyncio.to_thread(_joined_body, request, parts, limit)


def _joined_body(request: web.Request, parts: list[bytes], limit: int) -> bytes:
    return decoded_body(request, b"".join(parts), limit)


@dataclass(frozen=True, slots=True)
class Upload:
    data: bytes
    file_name: str | None  # the multipart part's file name, where the form sent one


async def read_upload(
    request: web.Request, limit: int, setting: str, noun: str, form_fields: tuple[str, ...]
) -> Upload:
    """An uploaded file: the body itself, or the first of the multipart form's `form_fields`
    — bounded by `limit` (the setting `setting`) either way: 413 as soon as more has come.
    Empty → 400 `empty_upload`."""
    if not request.content_type.startswith("multipart/"):
        upload = Upload(await read_body(request, limit, setting), None)
    else:
        upload = await _multipart_file(request, limit, setting, noun, form_fields)
    if not upload.data:
        raise ApiError(400, "empty_upload", f"{noun} was expected; the body is empty")
    return upload


async def _multipart_file(
    request: web.Request, limit: int, setting: str, noun: str, form_fields: tuple[str, ...]
) -> Upload:
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name not in form_fields:
            continue
        chunks, size = [], 0
        while chunk := await part.read_chunk(1 << 16):
            size += len(chunk)
            if size > limit:
                raise ApiError(
                    413, "too_large", f"{noun} may have at most {limit} bytes (setting {setting})"
                )
            chunks.append(chunk)
        # Browsers send the name as UTF-8, aiohttp's client percent-encoded: one name either way.
        name = urllib.parse.unquote(part.filename) if part.filename else None
        return Upload(b"".join(chunks), name)
    raise ApiError(
        400, "empty_upload", f"{noun} was expected in a form field ({', '.join(form_fields)})"
    )


def decoded_body(request: web.Request, raw: bytes, limit: int | None = None) -> bytes:
    """The body with its `Content-Encoding` undone. The server does not decode bodies itself
    (`auto_decompress=False` in `create_app`): a body that is not what its header says would
    break inside aiohttp, with a 500 and a traceback per request. Here it is a 400
    `invalid_body`; an unknown encoding is 415; inflating beyond `limit` (default: the app's
    `client_max_size`) is 413."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding == "identity":
        return raw
    if encoding not in _WBITS:
        raise ApiError(
            415,
            "unsupported_content_encoding",
            f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate)",
        )
    if limit is None:
        limit = request.app._client_max_size  # noqa: SLF001 — the one body limit of the app
    inflater = zlib.decompressobj(_WBITS[encoding])
    try:
        body = inflater.decompress(raw, limit + 1)
    except zlib.error:
        log.warning(
            "request body unreadable", extra=fields(path=request.path, content_encoding=encoding)
        )
        raise ApiError(
            400, "invalid_body", f"the body is not {encoding} data as Content-Encoding says"
        ) from None
    if len(body) > limit:
        raise ApiError(413, "too_large", f"the decoded body exceeds {limit} bytes")
    if not inflater.eof:
        raise ApiError(400, "invalid_body", f"the {encoding} body is cut short")
    return body


_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def request_language(request: web.Request, explicit: str | None = None) -> str:
    """The user's language for the words the server writes into what it makes (a draft's
    list heading, an export's headings): `explicit` (the page sends its own), else the
    first of the request's `Accept-Language`, else English."""
    tag = explicit or request.headers.get("Accept-Language", "").split(",")[0].split(";")[0]
    return language_of(tag.strip())


def bounded_text(
    raw: str, *, limit: int, noun: str, empty_code: str, long_code: str, user_id: str
) -> str:
    """`raw` trimmed, or the error: empty (or only invisible characters such as zero-width
    spaces) → 400 `empty_code`; over `limit` characters
    (the `max_message_chars` setting) → 413 `long_code`, with a warning naming the limit.
    Nothing is ever cut: a text is taken whole or refused."""
    text = raw.strip()
    if is_blank(text):
        raise ApiError(400, empty_code, f"the {noun} is empty")
    if len(text) > limit:
        log.warning(
            f"{noun} refused: too long",
            extra=fields(
                user_id=user_id, chars=len(text), limit=limit, setting="max_message_chars"
            ),
        )
        raise ApiError(
            413, long_code, f"the {noun} has {len(text)} characters; at most {limit} are accepted"
        )
    return text


def search_text(request: web.Request, limit: int) -> str:
    """The search text `?q=` (may be empty); over `limit` characters → 413
    `query_too_long`. Any text is a safe query: the stores quote what they search."""
    query = request.query.get("q", "")
    if len(query) > limit:
        raise ApiError(
            413, "query_too_long", f"the search text has {len(query)} characters; at most {limit}"
        )
    return query
