"""Auth (design §1, §9): start-token cookie, bearer, headless users, Origin checks."""

from __future__ import annotations

import sqlite3

import pytest

from app.api.app_keys import AUTH as AUTH_KEY
from app.api.app_keys import REDIS
from app.api.middleware import SESSION_COOKIE
from app.auth.accounts import hash_password, token_hash, verify_password
from app.memory import keys
from app.wiring.server import DATABASE_FILE, create_app
from tests.conftest import AUTH, TOKEN


async def test_api_requires_auth(client):
    response = await client.get("/api/me")
    assert response.status == 401
    assert (await response.json())["error"]["code"] == "unauthorized"


async def test_bearer_token_identifies_local(client):
    response = await client.get("/api/me", headers=AUTH)
    assert response.status == 200
    assert (await response.json())["user_id"] == "local"


@pytest.mark.parametrize("header", ["Bearer wrong", "Bearer ", "Basic " + TOKEN, TOKEN])
async def test_bad_authorization_header_is_refused(client, header):
    response = await client.get("/api/me", headers={"Authorization": header})
    assert response.status == 401


async def test_start_code_becomes_httponly_strict_cookie(client):
    code = client.app[AUTH_KEY].start_codes.issue()
    response = await client.get(f"/?token={code}", allow_redirects=False)
    assert response.status == 302
    assert response.headers["Location"] == "/"
    cookie = response.cookies[SESSION_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    assert code not in cookie.value and TOKEN not in cookie.value
    # The cookie alone now authenticates.
    client.session.cookie_jar.update_cookies({SESSION_COOKIE: cookie.value})
    me = await client.get("/api/me")
    assert me.status == 200 and (await me.json())["user_id"] == "local"


async def test_wrong_start_code_sets_no_cookie(client):
    response = await client.get("/?token=nope", allow_redirects=False)
    assert response.status == 401
    assert SESSION_COOKIE not in response.cookies


async def test_index_is_public(client):
    response = await client.get("/")
    assert response.status == 200
    assert "<html" in (await response.text()).lower()


async def test_query_token_only_counts_for_the_websocket_path(client):
    response = await client.get(f"/api/me?token={TOKEN}")
    assert response.status == 401


@pytest.mark.parametrize("origin", ["http://evil.example", "http://127.0.0.1:1", "null",
                                    "https://localhost"])
async def test_foreign_origin_is_refused_even_with_auth(client, origin):
    response = await client.post("/api/logout", headers={**AUTH, "Origin": origin})
    assert response.status == 403
    assert (await response.json())["error"]["code"] == "forbidden_origin"


async def test_own_origins_pass(client):
    port = client.port
    for origin in (f"http://127.0.0.1:{port}", f"http://localhost:{port}",
                   f"http://[::1]:{port}"):
        response = await client.post("/api/logout", headers={**AUTH, "Origin": origin})
        assert response.status == 204, origin


async def test_request_without_origin_passes_origin_check(client):
    response = await client.post("/api/logout", headers=AUTH)
    assert response.status == 204


async def test_configured_public_origin_passes(aiohttp_client, make_settings):
    app = create_app(make_settings(public_origin="https://nova.example.org"), local_token=TOKEN)
    client = await aiohttp_client(app)
    ok = await client.post("/api/logout", headers={**AUTH, "Origin": "https://nova.example.org"})
    assert ok.status == 204
    bad = await client.post("/api/logout", headers={**AUTH, "Origin": "https://other.example.org"})
    assert bad.status == 403


async def test_websocket_handshake_with_foreign_origin_gets_403_before_upgrade(client):
    response = await client.get("/api/ws", headers={
        **AUTH, "Origin": "http://evil.example", "Upgrade": "websocket",
        "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert response.status == 403


@pytest.fixture
def headless_user(settings):
    from tests.accounts import add_user

    return add_user(settings, "anna", "correct horse battery")


async def test_headless_login_sets_session_and_logout_ends_it(aiohttp_client, make_settings,
                                                               headless_user):
    app = create_app(make_settings(headless=True))
    client = await aiohttp_client(app)
    bad = await client.post("/api/login", json={"name": "anna", "password": "wrong password"})
    assert bad.status == 401 and (await bad.json())["error"]["code"] == "bad_credentials"
    unknown = await client.post("/api/login", json={"name": "bob", "password": "x" * 10})
    assert unknown.status == 401
    ok = await client.post("/api/login", json={"name": "anna", "password": "correct horse battery"})
    assert ok.status == 200
    assert ok.cookies[SESSION_COOKIE]["httponly"]
    me = await client.get("/api/me")
    assert (await me.json())["user_id"] == "anna"
    assert (await client.post("/api/logout")).status == 204
    assert (await client.get("/api/me")).status == 401


async def test_a_login_session_is_stored_under_its_hash(aiohttp_client, make_settings,
                                                        headless_user):
    """Whoever can list the keys of a shared Redis finds no session they could send: the
    id (the cookie's value) is in no key and no value, only its SHA-256 is."""
    client = await aiohttp_client(create_app(make_settings(headless=True)))
    ok = await client.post("/api/login", json={"name": "anna", "password": "correct horse battery"})
    assert ok.status == 200
    session_id = ok.cookies[SESSION_COOKIE].value
    redis = client.app[REDIS]
    everything = [key async for key in redis.scan_iter(count=1000)]
    assert not [key for key in everything if session_id in key]
    strings = [await redis.get(key) for key in everything if await redis.type(key) == "string"]
    assert not [value for value in strings if session_id in value]
    stored = keys.auth_session(token_hash(session_id))
    assert stored in everything and await redis.get(stored) == "anna"
    assert (await client.get("/api/me")).status == 200
    assert (await client.post("/api/logout")).status == 204
    assert await redis.exists(stored) == 0


async def test_a_session_key_written_by_hand_opens_nothing(aiohttp_client, make_settings,
                                                          headless_user):
    """Writing `auth_session:<id>` forges no session of <id>: a session is found by the hash
    of the id sent, and one that works needs the id whose hash the key is."""
    client = await aiohttp_client(create_app(make_settings(headless=True)))
    forged = "made-up-session-id-of-someone-who-can-write-to-redis"
    await client.app[REDIS].set(f"auth_session:{forged}", "anna", ex=600)
    client.session.cookie_jar.update_cookies({SESSION_COOKIE: forged})
    assert (await client.get("/api/me")).status == 401
    # The key of a hash opens nothing to whoever sends that hash as the cookie either.
    digest = token_hash(forged)
    await client.app[REDIS].set(keys.auth_session(digest), "anna", ex=600)
    client.session.cookie_jar.update_cookies({SESSION_COOKIE: digest})
    assert (await client.get("/api/me")).status == 401


async def test_user_api_token_works_as_bearer(aiohttp_client, make_settings, headless_user):
    client = await aiohttp_client(create_app(make_settings(headless=True)))
    me = await client.get("/api/me", headers={"Authorization": f"Bearer {headless_user}"})
    assert (await me.json())["user_id"] == "anna"


async def test_user_id_never_comes_from_the_body(client):
    response = await client.post("/api/logout", headers=AUTH, json={"user_id": "someone"})
    assert response.status == 204
    me = await client.get("/api/me", headers=AUTH)
    assert (await me.json())["user_id"] == "local"


@pytest.mark.sqlite_only("dumps the database file")
def test_tokens_are_stored_hashed(settings, headless_user):
    conn = sqlite3.connect(settings.data_path / DATABASE_FILE)
    dump = "\n".join(conn.iterdump())
    conn.close()
    assert headless_user not in dump
    assert "correct horse battery" not in dump


def test_password_hash_round_trip():
    stored = hash_password("pw-1234567")
    assert stored.startswith("scrypt$")
    assert verify_password("pw-1234567", stored)
    assert not verify_password("pw-1234568", stored)
    assert not verify_password("x", "garbage")
