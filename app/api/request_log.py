"""The request log: the outermost middleware — one `request` line per request (method, path,
status, milliseconds; `request cancelled` with its reason when the client or the server
went away), the request id (`X-Request-Id`: the caller's when it is a sane token, else a new
one) in every log line of the request and in the answer, and the admission of a burst
(`app.core.admission`) before any handler runs.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

from app.api.app_keys import ADMISSION
from app.api.errors import CLIENT_CLOSED_REQUEST, client_gone
from app.core import log as logctx

# The lines keep the logger name they had while this lived in the wiring.
log = logging.getLogger("app.wiring.server")

_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
CANCELLED = -1  # the request's task was cancelled while its client was still there


@web.middleware
async def request_log_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    rid = request.headers.get("X-Request-Id", "")
    if not _REQUEST_ID.fullmatch(rid):  # a caller's id is kept only when it is a sane token
        rid = uuid.uuid4().hex[:12]
    token = logctx.request_id.set(rid)
    start = time.perf_counter()
    status = 500
    try:
        await request.app[ADMISSION].admit()  # a burst begins a batch per loop round
        response = await handler(request)
        status = response.status
        response.headers["X-Request-Id"] = rid
        return response
    except asyncio.CancelledError:
        status = CLIENT_CLOSED_REQUEST if client_gone(request) else CANCELLED
        raise
    finally:
        timing = logctx.fields(
            method=request.method, path=request.path, ms=logctx.monotonic_ms(start)
        )
        if status in (CLIENT_CLOSED_REQUEST, CANCELLED):
            # One line, no traceback: nothing failed, nobody waits for an answer.
            timing["fields"]["reason"] = (
                "the client went away"
                if status == CLIENT_CLOSED_REQUEST
                else "the server is stopping"
            )
            log.info("request cancelled", extra=timing)
        else:
            timing["fields"]["status"] = status
            log.info("request", extra=timing)
        logctx.request_id.reset(token)
