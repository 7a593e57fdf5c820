"""The static UI: `/` (index), `/login`, `/static/…`, and the desktop start-token exchange."""

from __future__ import annotations

from aiohttp import web

from app.api.login import set_session_cookie
from app.errors import ApiError
from app.resources import web_root
from app.typedefs import AUTH


async def get_index(request: web.Request) -> web.StreamResponse:
    """Serve the UI. A visit with `?token=` (the URL the desktop app opens) turns the token
    into a session cookie and redirects, so the token does not stay in the address bar."""
    token = request.query.get("token")
    if token is not None:
        auth = request.app[AUTH]
        user_id = await auth.user_for_token(token)
        if user_id is None:
            raise ApiError(401, "unauthorized", "the start token is not valid")
        response = web.Response(status=302, headers={"Location": "/"})
        set_session_cookie(response, await auth.new_session(user_id))
        return response
    return web.FileResponse(web_root() / "index.html",
                            headers={"Cache-Control": "no-cache"})


async def get_login(request: web.Request) -> web.StreamResponse:
    page = web_root() / "login.html"
    return web.FileResponse(page if page.exists() else web_root() / "index.html",
                            headers={"Cache-Control": "no-cache"})


async def revalidate_static(request: web.Request, response: web.StreamResponse) -> None:
    """The UI's ES modules import each other by plain names (no build step, no hashes in
    file names): after an upgrade a browser must ask again (a cheap 304) instead of
    running a stale module next to a new one."""
    if request.path.startswith(STATIC_PREFIX):
        response.headers.setdefault("Cache-Control", "no-cache")


STATIC_PREFIX = "/static/"


async def get_profile_page(request: web.Request) -> web.StreamResponse:
    """The writing profile page (its data comes from `/api/profile/…`, which needs auth)."""
    return web.FileResponse(web_root() / "profile.html", headers={"Cache-Control": "no-cache"})


def setup(app: web.Application) -> None:
    app.router.add_get("/", get_index)
    app.router.add_get("/login", get_login)
    app.router.add_get("/profile", get_profile_page)
    app.router.add_static(STATIC_PREFIX, web_root(), append_version=False)
    app.on_response_prepare.append(revalidate_static)
