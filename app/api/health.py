from __future__ import annotations

from aiohttp import web

from app import __version__
from app.api.app_keys import AUTH, GATEWAY, REDIS_INFO
from app.api.middleware import identify
from app.api.wire import answer
from app.auth.accounts import LOCAL_USER


async def get_health(request: web.Request) -> web.Response:
    """`GET /api/health`, no auth: `{"status": "ok"}` — whether the server is up, nothing a
    scanner could look up. The admin (`local`) also gets the version, Redis and the model
    provider in use (`offline`: no model is configured or found)."""
    app = request.app
    if await identify(app[AUTH], request) != LOCAL_USER:
        return web.json_response({"status": "ok"})
    redis_info = app[REDIS_INFO]
    return answer(
        {
            "status": "ok",
            "version": __version__,
            "redis": {"version": redis_info.version, "embedded": redis_info.embedded},
            "llm": app[GATEWAY].info(),
        }
    )


def setup(app: web.Application) -> None:
    app.router.add_get("/api/health", get_health)
