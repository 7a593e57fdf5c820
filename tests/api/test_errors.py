"""Every error answer has the one SPEC §9 shape, whatever produced it."""

from __future__ import annotations

from aiohttp import web

from tests.conftest import AUTH


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


async def test_500_hides_the_traceback(aiohttp_client, app, caplog):
    async def boom(request: web.Request) -> web.Response:
        raise RuntimeError("secret internals")

    app.router.add_get("/api/boom", boom)
    client = await aiohttp_client(app)
    response = await client.get("/api/boom", headers=AUTH)
    assert response.status == 500
    body = await response.json()
    assert_error_shape(body, "internal_error")
    assert "secret internals" not in str(body)
    assert any("unhandled error" in r.getMessage() for r in caplog.records)


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
