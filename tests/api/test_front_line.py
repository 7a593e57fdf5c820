"""Issue 24, item 12: a request aiohttp's parser refuses — an over-long request line or
header, a malformed one, junk — is answered in the error shape with the security headers,
never echoes what was sent, and is one log line without a traceback. In process through the
CLI's runner (tests/front_line.py), and once through the real entry point."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from app.wiring.server import create_app
from tests.conftest import TOKEN
from tests.front_line import FrontLineTestServer, raw_exchange
from tests.procs import AppProcess
from tests.waiting import logged, until

MARK = "zq7"  # what an echo would carry back
PROBES = {
    "long request line": f"GET /{MARK * 3000} HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "long header": f"GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Big: {MARK * 3000}\r\n\r\n",
    "long header name": f"GET / HTTP/1.1\r\nHost: localhost\r\n{MARK * 3000}: x\r\n\r\n",
    "bad method": f"G<{MARK}> / HTTP/1.1\r\nHost: localhost\r\n\r\n",
    "bad header": f"GET / HTTP/1.1\r\nHost: localhost\r\nX-{MARK} <x>: 1\r\n\r\n",
    "bad version": f"GET / HTTP/9.{MARK}\r\nHost: localhost\r\n\r\n",
    "two content lengths": "POST /api/login HTTP/1.1\r\nHost: localhost\r\n"
                           "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    "bad chunk": "POST /api/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json"
                 f"\r\nTransfer-Encoding: chunked\r\n\r\n{MARK}\r\n{{}}\r\n0\r\n\r\n",
    "control character in path": f"GET /{MARK}\x01 HTTP/1.1\r\nHost: localhost\r\n\r\n",
}


def assert_shaped(status: int, headers: dict[str, str], body: bytes, probe: str) -> None:
    assert 400 <= status < 500, (probe, status, body[:200])
    assert headers.get("content-type", "").startswith("application/json"), (probe, headers)
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message"}, probe
    assert MARK not in body.decode(errors="replace"), probe
    assert "default-src 'self'" in headers.get("content-security-policy", ""), probe
    assert headers.get("x-content-type-options") == "nosniff", probe
    assert headers.get("referrer-policy") == "no-referrer", probe
    assert headers.get("server") == "Novaberg", probe


@pytest.fixture
async def port(aiohttp_client, settings):
    client = await aiohttp_client(FrontLineTestServer(create_app(settings, local_token=TOKEN)))
    return client.port


@pytest.mark.parametrize("probe", PROBES)
async def test_an_unreadable_request_gets_the_error_shape_and_headers(port, probe, caplog):
    caplog.set_level(logging.DEBUG)
    status, headers, body = await asyncio.get_running_loop().run_in_executor(
        None, raw_exchange, port, PROBES[probe].encode())
    assert_shaped(status, headers, body, probe)
    await until(lambda: logged(caplog, "unreadable request refused"))
    assert not [r for r in caplog.records if r.exc_info], probe  # no traceback
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], probe
    assert not [r for r in caplog.records if MARK in r.getMessage()
                or MARK in str(getattr(r, "fields", ""))], probe


def test_the_real_entry_point_serves_through_the_front_line(tmp_path):
    app = AppProcess(tmp_path / "data").start()
    try:
        for probe in ("long request line", "long header", "bad method"):
            status, headers, body = raw_exchange(app.port, PROBES[probe].encode())
            assert_shaped(status, headers, body, probe)
    finally:
        assert app.stop() == 0
    lines = [json.loads(line) for line in app.output().splitlines() if line.startswith("{")]
    refused = [line for line in lines if line["msg"] == "unreadable request refused"]
    assert len(refused) == 3 and not any("exc" in line for line in lines)
    assert MARK not in app.output()


@pytest.mark.parametrize("path", ["/static/x%00.js", "/static/" + "a" * 5000 + ".js"])
async def test_a_static_path_that_cannot_be_a_file_is_404(port, path):
    status, headers, body = await asyncio.to_thread(
        raw_exchange, port, f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close"
        "\r\n\r\n".encode())
    assert status == 404, body[:300]
    assert json.loads(body)["error"]["code"] == "not_found"
