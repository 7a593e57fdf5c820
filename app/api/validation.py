"""Reading request bodies: one place that turns bad JSON into the SPEC §9 error shape."""

from __future__ import annotations

from typing import TypeVar

import msgspec
from aiohttp import web

from app.errors import ApiError

T = TypeVar("T")


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
