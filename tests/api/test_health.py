"""`GET /api/health`: anyone may ask whether the server is up, only the admin learns what it
runs (issue 24, item 16: the versions of the app and of Redis are what a scanner looks up)."""

from __future__ import annotations

import pytest

from app import __version__
from app.wiring.server import create_app
from tests.accounts import add_user
from tests.conftest import AUTH, TOKEN


async def test_without_auth_health_says_only_that_it_is_up(client):
    response = await client.get("/api/health")
    assert response.status == 200
    assert await response.json() == {"status": "ok"}
    assert __version__ not in await response.text()


async def test_the_admin_gets_version_redis_and_model(client):
    response = await client.get("/api/health", headers=AUTH)
    assert response.status == 200
    body = await response.json()
    assert body["status"] == "ok"
    assert body["version"] == __version__
    assert body["redis"]["embedded"] is True
    assert body["redis"]["version"].startswith("6.")
    assert body["llm"]["provider"] == "offline"


@pytest.mark.parametrize("credentials", ["user", "bad token"])
async def test_another_user_or_a_bad_token_gets_the_short_answer(aiohttp_client, settings,
                                                                 credentials):
    anna = add_user(settings)
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    token = anna if credentials == "user" else "not-a-token"
    response = await client.get("/api/health", headers={"Authorization": f"Bearer {token}"})
    assert response.status == 200
    assert await response.json() == {"status": "ok"}


@pytest.mark.parametrize("path", ["/api/health", "/", "/api/nothing", "/static/js/main.js"])
async def test_no_answer_names_the_server_software_version(client, path):
    response = await client.get(path)
    assert response.headers["Server"] == "Novaberg"
