"""Issue 24, item 16: the session cookie is `Secure` when the public origin is https (the
browser then never sends it over plain http), and stays as it was otherwise (a desktop app on
http://127.0.0.1 must keep working)."""

from __future__ import annotations

import pytest

from app.api.app_keys import AUTH
from app.wiring.server import create_app
from tests.accounts import PASSWORD, add_user
from tests.conftest import TOKEN


@pytest.fixture
def anna(settings):
    return add_user(settings)


def session_cookie(response) -> str:
    [line] = [v for k, v in response.headers.items() if k.lower() == "set-cookie"
              and v.startswith("novaberg_session=")]
    return line


@pytest.mark.parametrize("origin, secure", [("https://nova.example.org", True),
                                            ("http://nova.lan:8765", False), (None, False)])
async def test_login_cookie(aiohttp_client, make_settings, anna, origin, secure):
    client = await aiohttp_client(create_app(make_settings(headless=True, public_origin=origin)))
    response = await client.post("/api/login", json={"name": "anna", "password": PASSWORD})
    assert response.status == 200
    cookie = session_cookie(response)
    assert ("; Secure" in cookie) is secure, cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie


@pytest.mark.parametrize("origin, secure", [("https://nova.example.org", True), (None, False)])
async def test_start_link_cookie(aiohttp_client, make_settings, origin, secure):
    client = await aiohttp_client(create_app(make_settings(public_origin=origin),
                                             local_token=TOKEN))
    code = client.app[AUTH].start_codes.issue()
    response = await client.get(f"/?token={code}", allow_redirects=False)
    assert response.status == 302
    assert ("; Secure" in session_cookie(response)) is secure


@pytest.mark.parametrize("origin, secure", [("https://nova.example.org", True), (None, False)])
async def test_logout_removes_the_cookie_with_the_same_attributes(aiohttp_client, make_settings,
                                                                  anna, origin, secure):
    client = await aiohttp_client(create_app(make_settings(headless=True, public_origin=origin)))
    login = await client.post("/api/login", json={"name": "anna", "password": PASSWORD})
    session_id = login.cookies["novaberg_session"].value
    # By hand: the test client keeps a Secure cookie from its plain-http requests.
    response = await client.post("/api/logout",
                                 headers={"Cookie": f"novaberg_session={session_id}"})
    assert response.status == 204
    cookie = session_cookie(response)
    assert "Max-Age=0" in cookie and ("; Secure" in cookie) is secure, cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
