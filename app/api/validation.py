"""Reading request bodies: one place that turns bad JSON into the SPEC §9 error shape."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterable
from typing import TypeVar

import msgspec
from aiohttp import web

from app.api.errors import ApiError, Handler
from app.core.log import fields
from app.storage.errors import Conflict, Missing

T = TypeVar("T")
# Characters that show nothing: a text of only these (and whitespace) is empty.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u2062\u2063\u2064"))
log = logging.getLogger(__name__)


async def read_json(request: web.Request, type_: type[T]) -> T:
    """Decode and validate the body as `type_` (a msgspec Struct forbidding unknown fields).

    Invalid JSON or wrong types → 400 `invalid_request`; a body over the app's
    `client_max_size` → 413 (raised by aiohttp, shaped by the error middleware).
    """
    body = decoded_body(request, await request.read())
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.ValidationError as exc:
        raise ApiError(400, "invalid_request", f"invalid body: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, "invalid_request", f"body is not valid JSON: {exc}") from None


def decoded_body(request: web.Request, raw: bytes) -> bytes:
    """The body with its `Content-Encoding` undone. The server does not decode bodies itself
    (`auto_decompress=False` in `create_app`): a body that is not what its header says would
    break inside aiohttp, with a 500 and a traceback per request. Here it is a 400
    `invalid_body`; an unknown encoding is 415; inflating beyond `client_max_size` is 413."""
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding == "identity":
        return raw
    if encoding not in _WBITS:
        raise ApiError(415, "unsupported_content_encoding",
                       f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate)")
    limit = request.app._client_max_size  # noqa: SLF001 — the one body limit of the app
    inflater = zlib.decompressobj(_WBITS[encoding])
    try:
        body = inflater.decompress(raw, limit + 1)
    except zlib.error:
        log.warning("request body unreadable", extra=fields(
            path=request.path, content_encoding=encoding))
        raise ApiError(400, "invalid_body",
                       f"the body is not {encoding} data as Content-Encoding says") from None
    if len(body) > limit:
        raise ApiError(413, "too_large", f"the decoded body exceeds {limit} bytes")
    if not inflater.eof:
        raise ApiError(400, "invalid_body", f"the {encoding} body is cut short")
    return body


_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def bounded_text(raw: str, *, limit: int, noun: str, empty_code: str, long_code: str,
                 user_id: str) -> str:
    """`raw` trimmed, or the error: empty (or only invisible characters such as zero-width
    spaces) → 400 `empty_code`; over `limit` characters
    (the `max_message_chars` setting) → 413 `long_code`, with a warning naming the limit.
    Nothing is ever cut: a text is taken whole or refused."""
    text = raw.strip()
    if not text.translate(_INVISIBLE).strip():
        raise ApiError(400, empty_code, f"the {noun} is empty")
    if len(text) > limit:
        log.warning(f"{noun} refused: too long", extra=fields(
            user_id=user_id, chars=len(text), limit=limit, setting="max_message_chars"))
        raise ApiError(413, long_code,
                       f"the {noun} has {len(text)} characters; at most {limit} are accepted")
    return text


def search_text(request: web.Request, limit: int) -> str:
    """The search text `?q=` (may be empty); over `limit` characters → 413
    `query_too_long`. Any text is a safe query: the stores quote what they search."""
    query = request.query.get("q", "")
    if len(query) > limit:
        raise ApiError(413, "query_too_long",
                       f"the search text has {len(query)} characters; at most {limit}")
    return query


def store_errors_as_api(handler: Handler) -> Handler:
    """A store's `Missing`/`Conflict` answered in the SPEC §9 error shape (404/409)."""
    async def wrapped(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except Missing as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        except Conflict as exc:
            raise ApiError(409, exc.code, exc.message) from None

    return wrapped


def add_store_routes(app: web.Application,
                     routes: Iterable[tuple[str, str, Handler]]) -> None:
    """Add `(method, path, handler)` routes whose handlers call a store: its `Missing` and
    `Conflict` are answered in the error shape (`store_errors_as_api`)."""
    for method, path, handler in routes:
        app.router.add_route(method, path, store_errors_as_api(handler))
