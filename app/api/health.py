from __future__ import annotations

from aiohttp import web

from app import __version__
from app.typedefs import REDIS_INFO, SETTINGS


async def get_health(request: web.Request) -> web.Response:
    """`GET /api/health`, no auth: version, Redis, model provider."""
    app = request.app
    redis_info = app[REDIS_INFO]
    settings = app[SETTINGS]
    return web.json_response({
        "status": "ok",
        "version": __version__,
        "redis": {"version": redis_info.version, "embedded": redis_info.embedded},
        "llm": {"provider": settings.llm_provider or "offline", "model": settings.llm_model},
    })


def setup(app: web.Application) -> None:
    app.router.add_get("/api/health", get_health)
