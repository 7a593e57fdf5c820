"""Issue 11: login backoff and hashing off the loop, start-token exchange, Host header,
security headers."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from app.api.app_keys import AUTH, REDIS, SETTINGS
from app.api.middleware import SESSION_COOKIE
from app.auth.accounts import verify_password
from app.auth.credentials import LoginThrottle
from app.memory import keys
from app.wiring.server import create_app
from tests.accounts import add_user
from tests.conftest import AUTH as BEARER
from tests.conftest import TOKEN

PASSWORD = "correct horse battery"


@pytest.fixture
def anna(settings):
    return add_user(settings, "anna", PASSWORD)


@pytest.fixture
async def headless(aiohttp_client, make_settings, anna):
    return await aiohttp_client(create_app(make_settings(headless=True)))


async def login(client, name, password):
    return await client.post("/api/login", json={"name": name, "password": password})


# --- item 2: login ----------------------------------------------------------------------------

async def test_failed_logins_back_off_with_429_and_retry_after(headless, caplog):
    caplog.set_level(logging.WARNING)
    for i in range(5):
        response = await login(headless, "anna", f"guess-{i}")
        assert response.status == 401, i
    refused = await login(headless, "anna", PASSWORD)  # even the right one must wait now
    assert refused.status == 429  # from this address: the name and the address failed
    assert int(refused.headers["Retry-After"]) >= 1
    assert (await refused.json())["error"]["code"] == "login_backoff"
    assert SESSION_COOKIE not in refused.cookies
    # The state lives in Redis (shared by every process on it), under the one key builder.
    redis = headless.app[REDIS]
    kind, who = LoginThrottle.subjects("anna", "127.0.0.1")[0]
    assert await redis.pttl(keys.login_blocked(kind, who)) > 0
    failed = [r for r in caplog.records if r.getMessage() == "login failed"]
    assert len(failed) == 5 and all(r.fields["name"] == "anna" for r in failed)
    assert not any("guess-" in r.getMessage() or "guess-" in str(getattr(r, "fields", ""))
                   for r in caplog.records)
    await asyncio.sleep(float(refused.headers["Retry-After"]) + 0.1)
    ok = await login(headless, "anna", PASSWORD)
    assert ok.status == 200


async def test_backoff_also_counts_per_client_across_names(headless):
    for i in range(headless.app[SETTINGS].login_client_free_failures):
        assert (await login(headless, f"nobody{i}", "x" * 12)).status == 401
    response = await login(headless, "someone-else", "x" * 12)
    assert response.status == 429


async def test_password_hash_does_not_stall_the_event_loop(headless):
    """While logins hash, the loop keeps ticking: no gap near one scrypt's duration."""
    started = time.perf_counter()
    verify_password(PASSWORD, "scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$" + "A" * 44)
    one_hash = time.perf_counter() - started
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            gaps.append(time.perf_counter() - before)

    ticker = asyncio.create_task(tick())
    await asyncio.gather(login(headless, "anna", PASSWORD), login(headless, "anna", PASSWORD),
                         login(headless, "anna", PASSWORD))
    done.set()
    await ticker
    assert max(gaps) < one_hash, (max(gaps), one_hash)


# --- item 3: the start link cannot switch who you are -----------------------------------------

async def test_api_token_is_not_a_start_link(client, anna):
    for token in (TOKEN, anna):  # the local API token, another user's API token
        response = await client.get(f"/?token={token}", allow_redirects=False)
        assert response.status == 401
        assert SESSION_COOKIE not in response.cookies
        assert (await response.json())["error"]["code"] == "invalid_start_link"


async def test_start_code_works_once(client):
    code = client.app[AUTH].start_codes.issue()
    first = await client.get(f"/?token={code}", allow_redirects=False)
    assert first.status == 302 and SESSION_COOKIE in first.cookies
    client.session.cookie_jar.clear()
    second = await client.get(f"/?token={code}", allow_redirects=False)
    assert second.status == 401 and SESSION_COOKIE not in second.cookies


async def test_a_used_start_link_in_the_signed_in_browser_leads_to_the_chat(client, anna):
    """Found on the walk: the tab the desktop app opens uses the start link, and a user who
    clicks the same link in the terminal got a JSON error page in a browser that was signed
    in already. That browser is sent to the chat, with no new session; a browser signed in
    as another user (or not at all) is still refused, and the link stays used."""
    code = client.app[AUTH].start_codes.issue()
    first = await client.get(f"/?token={code}", allow_redirects=False)
    assert first.status == 302
    for expired in (code, "never-issued-code"):
        again = await client.get(f"/?token={expired}", allow_redirects=False)
        assert again.status == 302 and again.headers["Location"] == "/"
        assert SESSION_COOKIE not in again.cookies
    client.session.cookie_jar.clear()
    as_anna = await client.get(f"/?token={code}", allow_redirects=False,
                               headers={"Authorization": f"Bearer {anna}"})
    assert as_anna.status == 401
    assert (await as_anna.json())["error"]["code"] == "invalid_start_link"
    stranger = await client.get(f"/?token={code}", allow_redirects=False)
    assert stranger.status == 401 and SESSION_COOKIE not in stranger.cookies


async def test_cross_site_start_link_is_refused_and_not_used_up(client):
    code = client.app[AUTH].start_codes.issue()
    refused = await client.get(f"/?token={code}", allow_redirects=False,
                               headers={"Sec-Fetch-Site": "cross-site"})
    assert refused.status == 403 and SESSION_COOKIE not in refused.cookies
    assert (await refused.json())["error"]["code"] == "cross_site_start_link"
    direct = await client.get(f"/?token={code}", allow_redirects=False,
                              headers={"Sec-Fetch-Site": "none"})
    assert direct.status == 302


async def test_no_start_link_in_headless_mode(aiohttp_client, make_settings):
    client = await aiohttp_client(create_app(make_settings(headless=True), local_token=TOKEN))
    code = client.app[AUTH].start_codes.issue()
    response = await client.get(f"/?token={code}", allow_redirects=False)
    assert response.status == 403 and SESSION_COOKIE not in response.cookies
    minted = await client.post("/api/start-link", headers=BEARER)
    assert minted.status == 403


async def test_local_user_can_mint_a_start_link_for_another_browser(client):
    minted = await client.post("/api/start-link", headers=BEARER)
    assert minted.status == 201
    url = (await minted.json())["url"]
    assert TOKEN not in url
    response = await client.get(url, allow_redirects=False)
    assert response.status == 302 and SESSION_COOKIE in response.cookies
    client.session.cookie_jar.clear()
    assert (await client.post("/api/start-link")).status == 401  # not without auth


# --- item 4: Host header (DNS rebinding) -----------------------------------------------------

@pytest.mark.parametrize("host", ["evil.example", "evil.example:8765", "127.0.0.1.evil.example",
                                  "localhost.evil.example"])
async def test_foreign_host_gets_421(client, host):
    for path in ("/", "/api/health", "/api/me", "/static/js/main.js"):
        response = await client.get(path, headers={**BEARER, "Host": host})
        assert response.status == 421, (path, response.status)
        assert (await response.json())["error"]["code"] == "misdirected_request"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:1234", "[::1]:8765", "LOCALHOST."])
async def test_loopback_hosts_are_served(client, host):
    response = await client.get("/api/me", headers={**BEARER, "Host": host})
    assert response.status == 200


async def test_bound_and_public_hosts_are_served(aiohttp_client, make_settings):
    settings = make_settings(headless=True, host="nova.lan",
                             public_origin="https://nova.example.org")
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    for host in ("nova.lan:8765", "nova.example.org", "127.0.0.1"):
        assert (await client.get("/api/me", headers={**BEARER, "Host": host})).status == 200
    assert (await client.get("/api/me", headers={**BEARER, "Host": "other.lan"})).status == 421


async def test_wildcard_bind_serves_ip_literals_but_not_foreign_names(aiohttp_client,
                                                                      make_settings):
    client = await aiohttp_client(create_app(make_settings(headless=True, host="0.0.0.0"),
                                             local_token=TOKEN))
    ok = await client.get("/api/me", headers={**BEARER, "Host": "192.168.1.20:8765"})
    assert ok.status == 200
    bad = await client.get("/api/me", headers={**BEARER, "Host": "attacker.example:8765"})
    assert bad.status == 421


# --- item 10: security headers, invisible messages ---------------------------------------------

@pytest.mark.parametrize("path", ["/", "/login", "/static/js/main.js", "/api/health",
                                  "/api/nothing-here"])
async def test_security_headers(client, path):
    response = await client.get(path)
    csp = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Referrer-Policy"] == "no-referrer"


@pytest.mark.parametrize("text", ["\u200b", "\u200b\u200d \ufeff", " \u2060\n"])
async def test_invisible_only_message_is_empty(client, text):
    response = await client.post("/api/characters/nova/messages", json={"text": text},
                                 headers=BEARER)
    assert response.status == 400
    assert (await response.json())["error"]["code"] == "empty_message"
    reminder = await client.post("/api/characters/nova/reminders",
                                 json={"text": text, "due_at": time.time() + 60}, headers=BEARER)
    assert reminder.status == 400


# --- item 8: odd requests ------------------------------------------------------------------------

async def test_gzip_header_on_a_plain_body_is_400(client, caplog):
    for path in ("/api/characters/nova/messages", "/api/characters/nova/reminders"):
        response = await client.post(path, data=b'{"text": "hallo"}', headers={
            **BEARER, "Content-Encoding": "gzip", "Content-Type": "application/json"})
        assert response.status == 400
        assert (await response.json())["error"]["code"] == "invalid_body"
    assert not any(r.exc_info for r in caplog.records)  # no traceback per request
    assert (await (await client.get("/api/characters/nova/session", headers=BEARER)).json())[
        "turns"] == []


@pytest.mark.parametrize("path", ["/static/nope.js", "/static/js/nope.js", "/static/js",
                                  "/static/js/", "/static/../app/server.py",
                                  "/static/%2e%2e/app/server.py", "/nothing", "/api/nothing"])
async def test_every_404_is_in_the_error_shape(client, path):
    response = await client.get(path, headers=BEARER)
    assert response.status == 404
    assert (await response.json())["error"]["code"] == "not_found"


async def test_static_files_are_still_served(client):
    response = await client.get("/static/js/main.js")
    assert response.status == 200 and "javascript" in response.headers["Content-Type"]
    assert response.headers["Cache-Control"] == "no-cache"


async def test_a_real_gzip_body_is_read(client):
    import gzip
    import json

    body = gzip.compress(json.dumps({"text": "hallo gzip"}).encode())
    response = await client.post("/api/characters/nova/messages", data=body, headers={
        **BEARER, "Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert response.status == 202
    bomb = gzip.compress(b'{"text": "' + b"a" * 3_000_000 + b'"}')
    too_big = await client.post("/api/characters/nova/messages", data=bomb, headers={
        **BEARER, "Content-Encoding": "gzip", "Content-Type": "application/json"})
    assert too_big.status == 413
