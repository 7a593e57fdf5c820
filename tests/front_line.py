"""An in-process test server that serves like the CLI does: through `FrontLineRunner`, so
that requests aiohttp's parser refuses are answered by the app's front line."""

from __future__ import annotations

import socket
from typing import Any

from aiohttp.test_utils import TestServer
from aiohttp.web_runner import BaseRunner

from app.api.front_line import FrontLineRunner


class FrontLineTestServer(TestServer):
    async def _make_runner(self, **kwargs: Any) -> BaseRunner:
        return FrontLineRunner(self.app, **kwargs)


def raw_exchange(port: int, request: bytes, timeout: float = 5.0) -> tuple[int, dict[str, str],
                                                                          bytes]:
    """Send `request` as it is over a plain socket; the answer's status, headers (names in
    lower case) and body, read until the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), headers, body
