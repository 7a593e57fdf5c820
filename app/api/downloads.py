"""Downloads written as they are made: an export's chunks, each read and serialised on a
reader thread (`Database.read_stream`), go out as they come (chunked transfer), so neither
the event loop nor the memory carries the download's size (`/api/exports/*`,
`/api/journal/export`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator

from aiohttp import web

from app.core.log import fields

log = logging.getLogger(__name__)


async def streamed_download(
    request: web.Request, chunks: AsyncGenerator[bytes, None], filename: str, content_type: str
) -> web.StreamResponse:
    """A download written chunk by chunk as `chunks` come (chunked transfer).

    A chunk that fails after the first was sent can no longer become an error response (the
    status went out with the first): the download is broken off — logged, and the connection
    closed before the transfer's end, so the client sees it cut short, never as a whole
    file. The stream's reader and its connection are released either way (`read_stream`)."""
    async with contextlib.aclosing(chunks):
        first = await anext(chunks, b"")  # a failing query still answers in the error shape
        response = web.StreamResponse(
            headers={"Content-Disposition": f'attachment; filename="{filename}"'}
        )
        response.content_type = content_type
        if content_type != "application/zip":
            response.charset = "utf-8"
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            await response.write(first)
            async for chunk in chunks:
                await response.write(chunk)
        except ConnectionResetError:
            raise  # the client went away (the error middleware knows it)
        except Exception:
            log.exception(
                "download broken off: a chunk failed after the first was sent; connection closed",
                extra=fields(path=request.path, filename=filename),
            )
            if request.transport is not None:
                request.transport.close()
            return response
    await response.write_eof()
    return response
