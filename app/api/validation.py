"""Reading request bodies: one place that turns bad JSON into the SPEC §9 error shape."""

from __future__ import annotations

import logging
from typing import TypeVar

import msgspec
from aiohttp import web

from app.errors import ApiError
from app.log import fields

T = TypeVar("T")
# Characters that show nothing: a text of only these (and whitespace) is empty.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2061\u2062\u2063\u2064"))
log = logging.getLogger(__name__)


async def read_json(request: web.Request, type_: type[T]) -> T:
    """Decode and validate the body as `type_` (a msgspec Struct forbidding unknown fields).

    Invalid JSON or wrong types → 400 `invalid_request`; a body over the app's
    `client_max_size` → 413 (raised by aiohttp, shaped by the error middleware).
    """
    body = await request.read()
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.ValidationError as exc:
        raise ApiError(400, "invalid_request", f"invalid body: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ApiError(400, "invalid_request", f"body is not valid JSON: {exc}") from None


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
