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
"""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

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
    """aiohttp's connection protocol, with its error answer in the app's shape."""

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
    def __call__(self) -> RequestHandler:
        return FrontLineHandler(self, loop=self._loop, **self._kwargs)


class FrontLineRunner(web.AppRunner):
    """`web.AppRunner` whose server builds `FrontLineHandler` connections."""

    async def _make_server(self) -> web.Server:
        made = await super()._make_server()  # the app's startup, its handler arguments
        return FrontLineServer(
            made.request_handler,
            request_factory=made.request_factory,
            handler_cancellation=made.handler_cancellation,
            loop=made._loop,  # noqa: SLF001 - aiohttp keeps the server's arguments private
            **made._kwargs,  # noqa: SLF001 - the same server, only of our class
        )
