from __future__ import annotations

from aiohttp import web

from app import __version__
from app.api.app_keys import GATEWAY, REDIS_INFO


async def get_health(request: web.Request) -> web.Response:
    """`GET /api/health`, no auth: version, Redis, the model provider in use (`offline`:
    no model is configured or found; the UI says so)."""
    app = request.app
    redis_info = app[REDIS_INFO]
    return web.json_response({
        "status": "ok",
        "version": __version__,
        "redis": {"version": redis_info.version, "embedded": redis_info.embedded},
        "llm": app[GATEWAY].info(),
    })


def setup(app: web.Application) -> None:
    app.router.add_get("/api/health", get_health)
