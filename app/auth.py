"""Who is asking, and may the request come from where it comes from (SPEC §1, §9).

Identities:
- `local` always exists. Its token is `--token`/`NOVABERG_TOKEN`, else (desktop mode) a new
  random one per start. The browser is opened once at `/?token=…`; that visit becomes a
  session cookie (HttpOnly, SameSite=Strict) and the token leaves the address bar.
- Headless users (`novaberg user add NAME`) have a scrypt password hash and API tokens in
  SQLite (only the SHA-256 of a token is stored). `POST /api/login` sets the session cookie.
- Scripts send `Authorization: Bearer <token>`; the WebSocket also accepts `?token=`.

The `user_id` of a request always comes from here, never from its body.

Origin: a state-changing request or a WebSocket handshake whose `Origin` is present and not
the server's own gets 403, whatever its auth (CSRF, DNS rebinding). The server's own port is
read from the connection's local socket, so the check is right whatever port was bound.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import sqlite3
import time
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis
from aiohttp import web

from app.errors import ApiError
from app.memory import keys
from app.storage.database import Database

log = logging.getLogger(__name__)

LOCAL_USER = "local"
SESSION_COOKIE = "novaberg_session"
SESSION_TTL_SECONDS = 30 * 24 * 3600
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PUBLIC_PATHS = frozenset({"/", "/login", "/api/health", "/api/login", "/favicon.ico",
                          "/profile"})
PUBLIC_PREFIXES = ("/static/",)
USER_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.")

USER_ID = web.RequestKey("user_id", str)


# --- secrets -------------------------------------------------------------------------------

def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P)
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(password.encode(), salt=base64.b64decode(salt),
                                n=int(n), r=int(r), p=int(p), dklen=len(expected))
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


def valid_user_name(name: str) -> bool:
    return 1 <= len(name) <= 64 and set(name) <= USER_NAME_CHARS and name != LOCAL_USER


# --- users in SQLite -----------------------------------------------------------------------

def add_user_sync(conn: sqlite3.Connection, name: str, password: str) -> str:
    """Create a user with a password and one API token; returns the token (shown once)."""
    token = new_token()
    now = time.time()
    with conn:
        conn.execute("INSERT INTO users (user_id, password_hash, created_at) VALUES (?, ?, ?)",
                     (name, hash_password(password), now))
        conn.execute("INSERT INTO api_tokens (token_hash, user_id, created_at) VALUES (?, ?, ?)",
                     (token_hash(token), name, now))
    return token


def count_users_sync(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT COUNT(*) FROM users").fetchone()[0]


class Auth:
    """Resolves a request to a user id, or refuses it."""

    def __init__(self, db: Database, redis: aioredis.Redis, local_token: str | None,
                 public_origin: str | None, host: str) -> None:
        self.db = db
        self.redis = redis
        self.local_token = local_token
        self.public_origin = public_origin.rstrip("/") if public_origin else None
        self.host = host

    async def user_for_token(self, token: str) -> str | None:
        if self.local_token and hmac.compare_digest(token.encode(), self.local_token.encode()):
            return LOCAL_USER
        digest = token_hash(token)

        def _find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT user_id FROM api_tokens WHERE token_hash = ?",
                               (digest,)).fetchone()
            return row[0] if row else None

        return await self.db.execute_fn(_find)

    async def login(self, name: str, password: str) -> str | None:
        def _find(conn: sqlite3.Connection) -> str | None:
            row = conn.execute("SELECT password_hash FROM users WHERE user_id = ?",
                               (name,)).fetchone()
            return row[0] if row else None

        stored = await self.db.execute_fn(_find)
        # Verify against a dummy hash for unknown names, so timing does not reveal them.
        ok = verify_password(password, stored or _DUMMY_HASH)
        return name if stored and ok else None

    async def new_session(self, user_id: str) -> str:
        session_id = new_token()
        await self.redis.set(keys.auth_session(session_id), user_id, ex=SESSION_TTL_SECONDS)
        return session_id

    async def end_session(self, session_id: str) -> None:
        await self.redis.delete(keys.auth_session(session_id))

    async def user_for_session(self, session_id: str) -> str | None:
        value = await self.redis.get(keys.auth_session(session_id))
        return value.decode() if isinstance(value, bytes) else value

    async def identify(self, request: web.Request) -> str | None:
        header = request.headers.get("Authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return None
            return await self.user_for_token(token.strip())
        session_id = request.cookies.get(SESSION_COOKIE)
        if session_id:
            user = await self.user_for_session(session_id)
            if user:
                return user
        query_token = request.query.get("token")
        if query_token and request.path == "/api/ws":
            return await self.user_for_token(query_token)
        return None

    def allowed_origins(self, request: web.Request) -> set[str]:
        sockname = request.transport.get_extra_info("sockname") if request.transport else None
        port = sockname[1] if sockname else None
        origins = {f"http://127.0.0.1:{port}", f"http://localhost:{port}",
                   f"http://[::1]:{port}"}
        if self.host:
            host = f"[{self.host}]" if ":" in self.host else self.host
            origins.add(f"http://{host}:{port}")
        if self.public_origin:
            origins.add(self.public_origin)
        return origins

    def origin_allowed(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        if origin is None:
            return True  # not a browser: the CSRF/rebinding check does not apply
        return origin.rstrip("/") in self.allowed_origins(request)


_DUMMY_HASH = hash_password(secrets.token_hex(8))


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)


def needs_origin_check(request: web.Request) -> bool:
    is_ws = request.headers.get("Upgrade", "").lower() == "websocket"
    return request.method not in SAFE_METHODS or is_ws


def auth_middleware_factory(get_auth: Callable[[web.Request], Auth]) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def auth_middleware(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        auth = get_auth(request)
        if needs_origin_check(request) and not auth.origin_allowed(request):
            log.warning("foreign origin refused", extra={"fields": {
                "path": request.path, "origin": request.headers.get("Origin")}})
            raise ApiError(403, "forbidden_origin", "request from a foreign origin")
        if is_public(request.path):
            return await handler(request)
        user_id = await auth.identify(request)
        if user_id is None:
            raise ApiError(401, "unauthorized", "authentication required",
                           headers={"WWW-Authenticate": "Bearer"})
        request[USER_ID] = user_id
        return await handler(request)

    return auth_middleware
