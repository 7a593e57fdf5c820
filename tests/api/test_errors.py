"""Every error answer has the one design §9 shape, whatever produced it."""

from __future__ import annotations

import asyncio
import logging

import pytest
from aiohttp import web

from tests.conftest import AUTH, TOKEN
from tests.procs import AppProcess, wait_for
from tests.waiting import WAIT, until


def assert_error_shape(body: dict, code: str) -> None:
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]


async def test_404_has_error_shape(client):
    response = await client.get("/api/nothing-here", headers=AUTH)
    assert response.status == 404
    assert_error_shape(await response.json(), "not_found")


async def test_405_has_error_shape_and_allow_header(client):
    response = await client.delete("/api/health", headers=AUTH)
    assert response.status == 405
    assert "GET" in response.headers["Allow"]
    assert_error_shape(await response.json(), "method_not_allowed")


async def test_413_has_error_shape(client):
    response = await client.post("/api/login", data=b"x" * (2 * 1024 * 1024),
                                 headers={"Content-Type": "application/json"})
    assert response.status == 413
    assert_error_shape(await response.json(), "too_large")


async def test_400_on_invalid_json_and_wrong_types(client):
    response = await client.post("/api/login", data=b"{not json")
    assert response.status == 400
    assert_error_shape(await response.json(), "invalid_request")
    response = await client.post("/api/login", json={"name": 3, "password": "x"})
    assert response.status == 400
    assert_error_shape(await response.json(), "invalid_request")
    response = await client.post("/api/login", json={"name": "a", "password": "b", "extra": 1})
    assert response.status == 400


# A ConnectionResetError of another connection than the client's (the model server's, say)
# is a failure like any other, not the client going away (issue 24, item 15).
@pytest.mark.parametrize("error", [RuntimeError, ConnectionResetError])
async def test_500_hides_the_traceback(aiohttp_client, app, caplog, error):
    async def boom(request: web.Request) -> web.Response:
        raise error("secret internals")

    app.router.add_get("/api/boom", boom)
    client = await aiohttp_client(app)
    response = await client.get("/api/boom", headers=AUTH)
    assert response.status == 500
    body = await response.json()
    assert_error_shape(body, "internal_error")
    assert "secret internals" not in str(body)
    assert any("unhandled error" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_responses_carry_a_request_id(client):
    response = await client.get("/api/health")
    assert len(response.headers["X-Request-Id"]) >= 8


async def test_a_callers_request_id_is_kept_only_when_sane(client):
    kept = await client.get("/api/health", headers={"X-Request-Id": "trace-42.a_b"})
    assert kept.headers["X-Request-Id"] == "trace-42.a_b"
    for bad in ("x" * 65, "a b", "<script>", "ä"):
        replaced = await client.get("/api/health", headers={"X-Request-Id": bad})
        assert replaced.headers["X-Request-Id"] != bad
        assert len(replaced.headers["X-Request-Id"]) == 12


# --- issue 24, item 15: a client that goes away mid-request ----------------------------------

async def _send_half_and_hang_up(port: int, path: str) -> None:
    """Half a body, then the connection closed — once the app handles the request: its
    `100 Continue` (aiohttp sends it as the app's handling of the request begins) is seen."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n"
                 "Content-Type: application/json\r\nContent-Length: 100000\r\n"
                 "Expect: 100-continue\r\n\r\n".encode())
    await writer.drain()
    async with asyncio.timeout(WAIT):
        assert (await reader.readline()).startswith(b"HTTP/1.1 100")
    writer.write(b'{"text": "hal')
    await writer.drain()
    writer.close()


@pytest.mark.parametrize("path", ["/api/characters/nova/messages", "/api/imports",
                                  "/api/profile/import"])
async def test_a_client_that_disconnects_mid_request_is_one_cancelled_line(client, caplog,
                                                                           path):
    caplog.set_level(logging.INFO)
    await _send_half_and_hang_up(client.port, path)
    about = await until(lambda: [r for r in caplog.records
                                 if getattr(r, "fields", {}).get("path") == path],
                        what=f"the request line of {path}")
    assert [r.getMessage() for r in about] == ["request cancelled"]
    assert about[0].fields["reason"] == "the client went away"
    assert about[0].levelno == logging.INFO and about[0].fields["method"] == "POST"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def test_the_real_entry_point_logs_a_vanished_client_as_one_cancelled_line(tmp_path):
    """The CLI's server does not cancel the handler: its body read fails instead."""
    import json

    app = AppProcess(tmp_path / "data", token=TOKEN).start()
    try:
        asyncio.run(_send_half_and_hang_up(app.port, "/api/imports"))
        assert wait_for(lambda: '"path":"/api/imports"' in app.output())
    finally:
        assert app.stop() == 0
    lines = [json.loads(line) for line in app.output().splitlines() if line.startswith("{")]
    about = [line for line in lines if line.get("path") == "/api/imports"]
    assert [(line["msg"], line["reason"]) for line in about] == [
        ("request cancelled", "the client went away")]
    assert not [line for line in lines if "exc" in line or line["level"] == "error"]
