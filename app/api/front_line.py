"""What answers before the app does: a request aiohttp's parser cannot read.

An over-long request line or header, a malformed one, a second `Host`, junk on the port:
aiohttp answers these from its low-level protocol (`RequestHandler.handle_error`) before any
route, middleware or `on_response_prepare` runs — a plain-text 400 that echoes the offending
bytes (the path, the header) back, without the security headers, and a traceback in the log
per request. The app cannot reach that answer from a middleware (aiohttp has no hook for it,
aio-libs/aiohttp#3287), so `FrontLineRunner` — the `web.AppRunner` the CLI serves with —
builds its connections with `FrontLineHandler`, whose `handle_error` answers in the design §9
error shape with the security headers, never echoes the input, and logs one line (the error's
kind and the client, never the bytes).

aiohttp has no header read timeout: a connection that sends its request head a byte at a
time is held until the keep-alive timeout (an hour by default). `FrontLineHandler` gives the
head a deadline (setting `header_timeout`), armed when the connection opens and when the
first byte of a next request arrives on a kept-alive one, disarmed by a whole head; a
connection past it is closed with one log line.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from app.api.app_keys import SETTINGS
from app.api.errors import default_code, error_response
from app.api.pages import SECURITY_HEADERS, SERVER_NAME
from app.core.log import fields

log = logging.getLogger(__name__)

_MESSAGES = {
    400: "the request could not be read: its request line or a header is malformed or too long",
    413: "the request is too large",
    500: "internal server error",
}


class FrontLineHandler(RequestHandler):
    """aiohttp's connection protocol, with its error answer in the app's shape and a deadline
    for each request's head."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm_head_deadline()

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        waiting = self._waiter is not None  # between requests: these bytes begin a head
        if self._head_deadline is None and waiting and not self._upgraded:
            self._arm_head_deadline()
        super().data_received(data)
        if self._request_count > heads and self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None
        super().connection_lost(exc)

    def _arm_head_deadline(self) -> None:
        self._head_deadline = self._loop.call_later(self._header_timeout, self._head_too_slow)

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        if self.transport is None:
            return
        peer = self.transport.get_extra_info("peername")
        log.warning(
            "connection closed: no whole request head in time",
            extra=fields(client=str(peer[0]) if peer else None, seconds=self._header_timeout),
        )
        self.force_close()

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            log.error(
                "request failed before the app",
                exc_info=exc,
                extra=fields(status=status, client=request.remote),
            )
        else:
            # Junk or TLS on the plain port is what scanners send: not worth a warning.
            level = logging.INFO if isinstance(exc, BadHttpMethod) else logging.WARNING
            log.log(
                level,
                "unreadable request refused",
                extra=fields(
                    status=status, error=type(exc).__name__ if exc else None, client=request.remote
                ),
            )
        if request.writer.output_size > 0:
            raise ConnectionError(
                "response is sent already, cannot send another response with the error message"
            )
        response = error_response(
            status,
            default_code(status),
            _MESSAGES.get(status, "the request was refused"),
            headers={**SECURITY_HEADERS, "Server": SERVER_NAME},
        )
        response.force_close()
        return response


class FrontLineServer(web.Server):
    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout

    def __call__(self) -> RequestHandler:
        return FrontLineHandler(
            self, loop=self._loop, header_timeout=self._header_timeout, **self._kwargs
        )


class FrontLineRunner(web.AppRunner):
    """`web.AppRunner` whose server builds `FrontLineHandler` connections."""

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()  # the app's startup, its handler arguments
        return FrontLineServer(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            loop=made._loop,  # noqa: SLF001 - aiohttp keeps the server's arguments private
            header_timeout=self.app[SETTINGS].header_timeout,
            **made._kwargs,  # noqa: SLF001 - the same server, only of our class
        )
