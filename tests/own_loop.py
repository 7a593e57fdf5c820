"""An app served on an event loop of the test's own: hypothesis drives a sync test example by
example, each running its requests with `loop.run_until_complete`."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer


@contextmanager
def served_on_own_loop(app: web.Application, server_class: type[TestServer] = TestServer,
                       ) -> Iterator[tuple[asyncio.AbstractEventLoop, TestClient]]:
    loop = asyncio.new_event_loop()
    client = TestClient(server_class(app), loop=loop)
    loop.run_until_complete(client.start_server())
    try:
        yield loop, client
    finally:
        loop.run_until_complete(client.close())
        loop.close()
