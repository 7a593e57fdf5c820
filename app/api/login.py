"""Headless login/logout and the caller's identity."""

from __future__ import annotations

import msgspec
from aiohttp import web

from app.api.app_keys import AUTH, HUB, SETTINGS
from app.api.errors import ApiError
from app.api.middleware import SESSION_COOKIE, USER_ID
from app.api.validation import read_json
from app.auth.credentials import SESSION_TTL_SECONDS


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    password: str


def set_session_cookie(request: web.Request, response: web.StreamResponse, session_id: str) -> None:
    """HttpOnly, SameSite=Strict, and Secure when the server is reached over https (its
    public origin is https): such a browser never sends it over plain http."""
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        httponly=True,
        samesite="Strict",
        secure=_over_https(request),
        max_age=SESSION_TTL_SECONDS,
        path="/",
    )


def clear_session_cookie(request: web.Request, response: web.StreamResponse) -> None:
    """The cookie's removal, with the attributes it was set with (a browser keeps a Secure
    cookie that a removal without them does not name)."""
    response.del_cookie(
        SESSION_COOKIE, path="/", httponly=True, samesite="Strict", secure=_over_https(request)
    )


def _over_https(request: web.Request) -> bool:
    return (request.app[SETTINGS].public_origin or "").lower().startswith("https://")


async def post_login(request: web.Request) -> web.Response:
    body = await read_json(request, LoginBody)
    auth = request.app[AUTH]
    # A login that must wait first is refused as it is (`LoginBackoff`: 429, Retry-After).
    user_id = await auth.login(body.name, body.password, request.remote or "-")
    if user_id is None:
        raise ApiError(401, "bad_credentials", "unknown user or wrong password")
    response = web.json_response({"user_id": user_id})
    set_session_cookie(request, response, await auth.new_session(user_id))
    return response


async def post_logout(request: web.Request) -> web.Response:
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        await request.app[AUTH].end_session(session_id)
        # That session's open tabs stop receiving: here at once, in other processes at their
        # next credential check (within a second).
        request.app[HUB].check_credentials_now()
    response = web.Response(status=204)
    clear_session_cookie(request, response)
    return response


async def get_me(request: web.Request) -> web.Response:
    return web.json_response(
        {"user_id": request[USER_ID], "headless": request.app[SETTINGS].headless}
    )


def setup(app: web.Application) -> None:
    app.router.add_post("/api/login", post_login)
    app.router.add_post("/api/logout", post_logout)
    app.router.add_get("/api/me", get_me)
