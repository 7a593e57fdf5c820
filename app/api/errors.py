"""The one error shape of the API (design §9) and the middleware that produces it.

Every error answer is `{"error": {"code": "...", "message": "..."}}` with a fitting status,
whether a handler raised `ApiError` (or a room below its own `Refused`), aiohttp raised an HTTP exception (404, 405, 413, …) or
something crashed (500; the traceback goes to the log, never to the client).

A client that goes away mid-request (its connection reset while the body was read or the
answer written) crashed nothing: that request ends with `CLIENT_CLOSED_REQUEST`, which the
request log line reports as cancelled — one line, no traceback, nothing sent.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from app.core.refusal import Refused

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# nginx's convention for "the client closed the connection before the answer": never sent,
# only logged.
CLIENT_CLOSED_REQUEST = 499

_DEFAULT_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    421: "misdirected_request",
    429: "rate_limited",
    500: "internal_error",
    503: "not_ready",
}


class ApiError(Refused):
    """Raise from a handler to answer with the design §9 error shape (a room below raises its
    own `Refused`, answered alike)."""


def default_code(status: int) -> str:
    """The error code of a status that no handler chose one for."""
    return _DEFAULT_CODES.get(status, "http_error")


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    return web.json_response(error_body(code, message), status=status, headers=headers)


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except Refused as exc:  # ApiError, or a room's own refusal
        return error_response(exc.status, exc.code, exc.message, exc.headers)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = default_code(exc.status)
        headers = {k: v for k, v in exc.headers.items() if k.lower() in ("allow", "retry-after")}
        return error_response(exc.status, code, exc.reason, headers)
    except ConnectionResetError:
        if not client_gone(request):
            log.exception("unhandled error", extra={"fields": {"path": request.path}})
            return error_response(500, "internal_error", "internal server error")
        return error_response(
            CLIENT_CLOSED_REQUEST, "client_closed_request", "the client went away"
        )
    except Exception:
        log.exception("unhandled error", extra={"fields": {"path": request.path}})
        return error_response(500, "internal_error", "internal server error")


def client_gone(request: web.Request) -> bool:
    """The request's own connection is closed (not some other connection of the server)."""
    transport = request.transport
    return transport is None or transport.is_closing()
