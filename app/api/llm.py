"""The model gateway's endpoints, for the UI's settings panel and for admins.

- `GET /api/llm`: provider and model in use, offline flag, remote (privacy gateway on), URL,
  auto-detection state and the local servers it found, the cached context window.
- `POST /api/llm/test` `{"provider": "ollama"|"openai", "url"?: "http://…", "model"?: str}`:
  asks that server for its models and window, without switching to it; an empty or absent
  URL tests the provider's default (`default_urls` of `GET /api/llm`, what a save without a
  URL uses). `200 {"ok": true, "url", "models", "model", "context_window"}` or `200 {"ok":
  false, "url", "error": {code, message}}` (a failed connection is a result, not an API
  error). Admin only: it makes the server open a connection to a URL of the caller's
  choosing.
- `GET /api/admin/llm/traces?limit=N`: the newest model call records, newest first.

Admin is the user `local` (it exists in both modes; in headless mode only whoever holds its
token is it).
"""

from __future__ import annotations

import ipaddress
from typing import Literal
from urllib.parse import urlsplit

import msgspec
from aiohttp import web

from app.api.access import require_admin
from app.api.app_keys import GATEWAY
from app.api.errors import ApiError
from app.api.validation import read_json
from app.api.wire import answer


class ConnectionTest(msgspec.Struct, forbid_unknown_fields=True):
    provider: Literal["ollama", "openai"]
    url: str | None = None
    model: str | None = None


def check_model_url(url: str, name: str = "url") -> None:
    """400 unless `url` is a plain http(s) URL with a valid host and port (`name`: the body's
    field, in the message). Credentials in the URL are refused: `GET /api/llm` shows the URL
    to every user and the log records it (the key belongs in `api_key`, which is kept in
    secrets.toml and never shown)."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port  # .port raises on a port out of range
        if "[" in parts.netloc and host is not None:
            ipaddress.IPv6Address(host.split("%", 1)[0])
    except ValueError as exc:
        raise ApiError(400, "invalid_url", f"{name} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ApiError(400, "invalid_url", f"{name} must be an http:// or https:// URL with a host")
    if port == 0:
        raise ApiError(400, "invalid_url", f"{name}: port 0 is not a server port")
    if parts.username is not None or parts.password is not None:
        raise ApiError(
            400,
            "url_has_credentials",
            "put the API key in api_key, not in the URL (a URL is shown to every user and logged)",
        )


async def get_llm(request: web.Request) -> web.Response:
    return answer(request.app[GATEWAY].describe())


async def post_llm_test(request: web.Request) -> web.Response:
    require_admin(request)
    body = await read_json(request, ConnectionTest)
    gateway = request.app[GATEWAY]
    # Each provider the body can name has a default (`default_url` is None for no other).
    url = (body.url or "").strip() or gateway.default_url(body.provider) or ""
    check_model_url(url)
    return answer(await gateway.test_connection(body.provider, url, body.model))


async def get_traces(request: web.Request) -> web.Response:
    require_admin(request)
    raw = request.query.get("limit")
    limit = None
    if raw is not None:
        if not raw.isdigit() or int(raw) < 1:
            raise ApiError(400, "invalid_request", "limit must be a positive integer")
        limit = int(raw)
    return answer({"traces": request.app[GATEWAY].traces.list(limit)})


def setup(app: web.Application) -> None:
    app.router.add_get("/api/llm", get_llm)
    app.router.add_post("/api/llm/test", post_llm_test)
    app.router.add_get("/api/admin/llm/traces", get_traces)
