"""The static UI: `/` (index), `/login`, `/static/…`, and the desktop start-token exchange.

`web_root` finds the UI folder `web/` in a source tree, an installed wheel or the one-file
binary — never relative to the working directory, and never a place we write to: a frozen
binary's bundle (`sys._MEIPASS`) is read-only for us; user files go to the data dir. Data
files inside our packages (prompt templates, built-in characters) are read with
`importlib.resources` where they are used (`app.core.prompt_templates`, `app.characters.book`).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

from aiohttp import web

from app.api.app_keys import AUTH, SETTINGS
from app.api.errors import ApiError
from app.api.login import set_session_cookie
from app.api.middleware import LAUNCH_LINK_PATH, USER_ID, identify
from app.auth.accounts import LOCAL_USER
from app.auth.credentials import START_CODE_SECONDS
from app.core.log import fields

log = logging.getLogger(__name__)


def web_root() -> Path:
    """The static UI folder `web/`."""
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        return Path(bundle) / "web"
    spec = importlib.util.find_spec("web")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the web/ folder is missing from this installation")
    return Path(next(iter(spec.submodule_search_locations)))


async def get_index(request: web.Request) -> web.StreamResponse:
    """Serve the UI. A visit with `?token=<start code>` (the URL the desktop app opens)
    becomes a session cookie for `local` and redirects, so the code leaves the address bar."""
    code = request.query.get("token")
    if code is not None:
        return await exchange_start_code(request, code)
    return web.FileResponse(web_root() / "index.html", headers={"Cache-Control": "no-cache"})


async def exchange_start_code(request: web.Request, code: str) -> web.Response:
    """The desktop start link: only a single-use start code (never an API token), only in
    desktop mode, never from another site — a link must not switch who you are. A used or
    expired link opened in a browser that holds `local`'s session already leads to the chat."""
    if request.app[SETTINGS].headless:
        raise ApiError(
            403,
            "start_link_desktop_only",
            "start links exist in desktop mode only; log in at /login",
        )
    if request.headers.get("Sec-Fetch-Site", "").lower() == "cross-site":
        log.warning(
            "start link from another site refused",
            extra=fields(referer_present="Referer" in request.headers),
        )
        raise ApiError(
            403,
            "cross_site_start_link",
            "a start link must be opened directly, not from another site",
        )
    auth = request.app[AUTH]
    if not auth.start_codes.redeem(code):
        if await identify(auth, request) == LOCAL_USER:
            # The browser is signed in already: the tab the app opened used this link, and the
            # user clicked the one in the terminal too. The chat, not an error; no new session.
            return web.Response(status=302, headers={"Location": "/"})
        raise ApiError(
            401,
            "invalid_start_link",
            "the start link is not valid, was used already or is older than "
            f"{START_CODE_SECONDS // 60} minutes",
        )
    response = web.Response(status=302, headers={"Location": "/"})
    set_session_cookie(request, response, await auth.new_session(LOCAL_USER))
    return response


async def post_start_link(request: web.Request) -> web.Response:
    """`POST /api/start-link` (desktop mode, user `local`) → `201 {"url"}`: a new
    single-use start link, e.g. for a second browser; the API token stays out of URLs."""
    if request.app[SETTINGS].headless or request[USER_ID] != LOCAL_USER:
        raise ApiError(403, "start_link_desktop_only", "start links exist in desktop mode only")
    code = request.app[AUTH].start_codes.issue()
    return web.json_response({"url": f"/?token={code}"}, status=201)


async def post_launch_link(request: web.Request) -> web.Response:
    """`POST /api/launch-link` with `Authorization: Bearer <launch secret>` (desktop mode)
    → `201 {"url"}`: a new single-use start link for a second start of the binary, which
    read the secret from the data dir's instance file (`app.storage.datadir`). Public to the
    auth middleware: the launch secret is its credential, and it opens nothing else."""
    if request.app[SETTINGS].headless:
        raise ApiError(403, "start_link_desktop_only", "start links exist in desktop mode only")
    auth = request.app[AUTH]
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not auth.launch.matches(secret.strip()):
        log.warning("launch link refused: no or a wrong launch secret")
        raise ApiError(
            401,
            "unauthorized",
            "a launch link needs this app's launch secret",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return web.json_response({"url": f"/?token={auth.start_codes.issue()}"}, status=201)


async def get_login(request: web.Request) -> web.StreamResponse:
    page = web_root() / "login.html"
    return web.FileResponse(
        page if page.exists() else web_root() / "index.html", headers={"Cache-Control": "no-cache"}
    )


async def get_static(request: web.Request) -> web.StreamResponse:
    """A file under `web/`. Missing files and folders are a 404 in the error shape (aiohttp's
    own static route answers an empty octet-stream 404), and so is any path that cannot name a
    file (a NUL byte, an over-long name); nothing outside `web/` is served."""
    root = web_root().resolve()
    try:
        target = (root / request.match_info["path"]).resolve()
        found = target.is_relative_to(root) and target.is_file()
    except (ValueError, OSError):  # a NUL byte, a name too long: a path no file can have
        found = False
    if not found:
        raise ApiError(404, "not_found", f"no file {request.path}")
    return web.FileResponse(target)


BADGE_MAX = 99  # a favicon shows at most "99+"
_BADGE_ICON = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">
<defs><radialGradient id="g" cx="35%" cy="35%" r="75%"><stop offset="0" stop-color="#2f5fb3"/>
<stop offset="1" stop-color="#6b3fa0"/></radialGradient></defs>
<circle cx="28" cy="34" r="26" fill="url(#g)"/>
<circle cx="44" cy="20" r="20" fill="#b3261e" stroke="#fff" stroke-width="3"/>
<text x="44" y="27.5" font-family="system-ui, sans-serif" font-size="{size}" font-weight="700"
 text-anchor="middle" fill="#fff">{label}</text></svg>"""


async def get_badge_icon(request: web.Request) -> web.Response:
    """`/static/badge/{count}.svg`: the favicon with the number of the character's messages a
    tab in the background has not shown yet (1 to 99, then "99+"). Made here because the CSP
    (`default-src 'self'`) keeps a page from drawing its icon as a `data:` or `blob:` URL."""
    raw = request.match_info["count"]
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise ApiError(404, "not_found", f"no badge {raw!r}")
    count = int(raw)
    label = str(count) if count <= BADGE_MAX else f"{BADGE_MAX}+"
    size = {1: 26, 2: 22}.get(len(label), 16)
    return web.Response(
        text=_BADGE_ICON.format(label=label, size=size),
        content_type="image/svg+xml",
        headers={"Cache-Control": "max-age=86400"},
    )


async def revalidate_static(request: web.Request, response: web.StreamResponse) -> None:
    """The UI's ES modules import each other by plain names (no build step, no hashes in
    file names): after an upgrade a browser must ask again (a cheap 304) instead of
    running a stale module next to a new one."""
    if request.path.startswith(STATIC_PREFIX):
        response.headers.setdefault("Cache-Control", "no-cache")


STATIC_PREFIX = "/static/"
SECURITY_HEADERS = {
    # Scripts, styles, images and sockets only from this server; no page may frame the UI.
    # Images also from blob: — the editor previews a picture chosen on this machine.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' blob:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


# Instead of aiohttp's "Python/3.x aiohttp/3.y": no version for a scanner to look up.
SERVER_NAME = "Novaberg"


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every answer, pages, static files, API and errors alike (and, from
    `app.api.front_line`, on the requests aiohttp cannot even read)."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers["Server"] = SERVER_NAME


async def get_profile_page(request: web.Request) -> web.StreamResponse:
    """The writing profile page (its data comes from `/api/profile/…`, which needs auth)."""
    return web.FileResponse(web_root() / "profile.html", headers={"Cache-Control": "no-cache"})


def setup(app: web.Application) -> None:
    app.router.add_get("/", get_index)
    app.router.add_get("/login", get_login)
    app.router.add_get("/profile", get_profile_page)
    app.router.add_post("/api/start-link", post_start_link)
    app.router.add_post(LAUNCH_LINK_PATH, post_launch_link)
    app.router.add_get(STATIC_PREFIX + "badge/{count}.svg", get_badge_icon)
    app.router.add_get(STATIC_PREFIX + "{path:.+}", get_static)
    app.on_response_prepare.append(revalidate_static)
    app.on_response_prepare.append(security_headers)
