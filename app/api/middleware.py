"""The HTTP face of `app.auth`: the middleware that refuses a foreign Host or Origin and sets
the request's user, and the request keys it sets.

Order of the checks: the Host (400 `invalid_host` when it is missing, given twice or not a
well-formed `host [":" port]`; 421 `misdirected_request` for a foreign name), then — for a state-changing
request or a WebSocket handshake — the Origin (403 `forbidden_origin`), then, except on
the public paths, who is asking (401 `unauthorized`). The `user_id` of a request always comes
from here, never from its body.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import HttpVersion11, web

from app.api.errors import ApiError
from app.auth.credentials import Auth, Credential
from app.auth.origins import HostHeader, host_allowed, origin_allowed, parse_host

log = logging.getLogger(__name__)

SESSION_COOKIE = "novaberg_session"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Checks its own credential, the desktop app's launch secret (app.api.pages).
LAUNCH_LINK_PATH = "/api/launch-link"
PUBLIC_PATHS = frozenset(
    {"/", "/login", "/api/health", "/api/login", "/favicon.ico", "/profile", LAUNCH_LINK_PATH}
)
PUBLIC_PREFIXES = ("/static/",)

USER_ID = web.RequestKey("user_id", str)
# What authenticated the request (an open WebSocket lives as long as it stays valid).
CREDENTIAL = web.RequestKey("credential", Credential)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def needs_origin_check(request: web.Request) -> bool:
    is_ws = request.headers.get("Upgrade", "").lower() == "websocket"
    return request.method not in SAFE_METHODS or is_ws


def local_port(request: web.Request) -> int | None:
    sockname = request.transport.get_extra_info("sockname") if request.transport else None
    return sockname[1] if sockname else None


async def identify(auth: Auth, request: web.Request) -> str | None:
    """The user a request's bearer token, session cookie or (WebSocket only) `?token=` names;
    what named it is kept as the request's `CREDENTIAL`."""
    credential = await _credential(auth, request)
    if credential is None:
        return None
    request[CREDENTIAL] = credential
    return credential.user_id


async def _credential(auth: Auth, request: web.Request) -> Credential | None:
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return await auth.credential_for_token(token.strip())
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        credential = await auth.credential_for_session(session_id)
        if credential is not None and credential.user_id:
            return credential
    query_token = request.query.get("token")
    if query_token and request.path == "/api/ws":
        return await auth.credential_for_token(query_token)
    return None


def request_host(request: web.Request) -> HostHeader | None:
    """The request's parsed `Host`; None only for HTTP/1.0 without one (nothing a browser
    sends). 400 `invalid_host` when an HTTP/1.1 request has none, has several, or one that is
    not a well-formed `host [":" port]` (RFC 9112 §3.2), or when a target that is not a path
    names another host than the header."""
    values = request.headers.getall("Host", [])
    if not values and request.version < HttpVersion11:
        return None
    host = parse_host(values[0]) if len(values) == 1 else None
    if host is not None and not request.raw_path.startswith("/"):
        # Not the origin form: an absolute target (`GET http://name/path`, what proxies send;
        # aiohttp takes the host from it), `*` or an authority. It must name the same host as
        # the header.
        target = parse_host(urlsplit(request.raw_path).netloc)
        host = host if target == host else None
    if host is None:
        log.warning(
            "malformed Host refused",
            extra={
                "fields": {
                    "path": request.path,
                    "hosts": len(values),
                    "host": values[0][:100] if values else "",
                }
            },
        )
        raise ApiError(
            400,
            "invalid_host",
            "the Host header is missing, given twice or not a host name with an optional port",
        )
    return host


def auth_middleware_factory(
    get_auth: Callable[[web.Request], Auth],
) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def auth_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        auth = get_auth(request)
        host = request_host(request)
        if host is not None and not host_allowed(host, auth.host, auth.public_origin):
            log.warning(
                "foreign Host refused", extra={"fields": {"path": request.path, "host": host.name}}
            )
            raise ApiError(
                421, "misdirected_request", "this server does not answer for that host name"
            )
        if needs_origin_check(request) and not origin_allowed(
            request.headers.get("Origin"), local_port(request), auth.host, auth.public_origin
        ):
            log.warning(
                "foreign origin refused",
                extra={"fields": {"path": request.path, "origin": request.headers.get("Origin")}},
            )
            raise ApiError(403, "forbidden_origin", "request from a foreign origin")
        if is_public(request.path):
            return await handler(request)
        user_id = await identify(auth, request)
        if user_id is None:
            raise ApiError(
                401,
                "unauthorized",
                "authentication required",
                headers={"WWW-Authenticate": "Bearer"},
            )
        request[USER_ID] = user_id
        return await handler(request)

    return auth_middleware
