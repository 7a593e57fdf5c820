"""The app factory: one aiohttp application, one cleanup context per resource.

Resources come up in order and go down in reverse: data-dir lock → Redis (embedded or
external) → SQLite → auth. Later parts of the product (model gateway, runtime consumers,
reminder clock) add their own cleanup contexts in `create_app`.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable

import redis
import redis.asyncio as aioredis
from redis.driver_info import DriverInfo
from aiohttp import web

from app import log as logctx
from app.api import setup_routes
from app.auth import Auth, LoginThrottle, auth_middleware_factory
from app.backup.service import backup_ctx
from app.datadir import DataDirLock
from app.errors import error_middleware
from app.journal.service import journal_ctx
from app.llm import Gateway
from app.llm.privacy import IdentityRegistry
from app.pipeline.service import install as install_pipelines
from app.pipeline.service import pixie_ctx, reminder_clock_ctx
from app.purposes import register_offline_answers
from app.redis_server import EmbeddedRedis
from app.runtime.service import close_websockets, runtime_ctx
from app.settings import Settings
from app.storage.database import Database
from app.typedefs import (
    AUTH, DB, GATEWAY, LOCAL_TOKEN, PRIVACY, REDIS, REDIS_INFO, SETTINGS,
    RedisInfo,
)

log = logging.getLogger(__name__)

CLIENT_MAX_SIZE = 1024 * 1024  # a 20 000-char message is at most 80 KB of UTF-8 JSON
DATABASE_FILE = "novaberg.sqlite3"
REDIS_DIR = "redis"
REDIS_POOL_WAIT_SECONDS = 30.0  # a command waits this long for a free connection, then fails


_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@web.middleware
async def request_log_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    rid = request.headers.get("X-Request-Id", "")
    if not _REQUEST_ID.fullmatch(rid):  # a caller's id is kept only when it is a sane token
        rid = uuid.uuid4().hex[:12]
    token = logctx.request_id.set(rid)
    start = time.perf_counter()
    status = 500
    try:
        response = await handler(request)
        status = response.status
        response.headers["X-Request-Id"] = rid
        return response
    finally:
        log.info("request", extra=logctx.fields(
            method=request.method, path=request.path, status=status,
            ms=logctx.monotonic_ms(start)))
        logctx.request_id.reset(token)


async def data_dir_ctx(app: web.Application) -> AsyncIterator[None]:
    lock = DataDirLock(app[SETTINGS].data_path)
    lock.acquire()
    yield
    lock.release()


async def redis_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    embedded: EmbeddedRedis | None = None
    if settings.redis_url:
        url = settings.redis_url
    else:
        embedded = EmbeddedRedis(settings.data_path / REDIS_DIR, settings.redis_appendfsync)
        embedded.start()
        url = embedded.url
    # A blocking pool: with many pairs at once a command waits for a free connection instead
    # of failing with "Too many connections" (redis-py's default pool raises at 100). The
    # library version is given so that a new connection does not scan the installed
    # packages for it (milliseconds of event-loop time per connection).
    pool = aioredis.BlockingConnectionPool.from_url(
        url, decode_responses=True, max_connections=settings.redis_max_connections,
        timeout=REDIS_POOL_WAIT_SECONDS,
        driver_info=DriverInfo(name="redis-py", lib_version=redis.__version__))
    client = aioredis.Redis.from_pool(pool)
    try:
        info = await client.info("server")
        app[REDIS] = client
        app[REDIS_INFO] = RedisInfo(version=str(info["redis_version"]), embedded=embedded is not None)
        yield
    finally:
        await client.aclose()
        if embedded is not None:
            embedded.stop()


async def db_ctx(app: web.Application) -> AsyncIterator[None]:
    db = Database(app[SETTINGS].data_path / DATABASE_FILE)
    ran = await db.open()
    if ran:
        log.info("database migrated", extra=logctx.fields(migrations=ran))
    app[DB] = db
    yield
    await db.close()


async def auth_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    throttle = LoginThrottle(app[REDIS], settings.login_free_failures,
                             settings.login_max_delay_seconds)
    app[AUTH] = Auth(app[DB], app[REDIS], app.get(LOCAL_TOKEN), settings.public_origin,
                     settings.host, throttle=throttle)
    yield


async def llm_ctx(app: web.Application) -> AsyncIterator[None]:
    """The model gateway; auto-detection of a local model server runs in its background."""
    settings = app[SETTINGS]
    identities = IdentityRegistry(app[DB])
    # The deprecated identity list (setting, identities.txt) moves into the registry once.
    await identities.import_legacy(settings.data_path if settings.data_dir else None,
                                   settings.privacy_identities)
    app[PRIVACY] = identities
    gateway = Gateway(settings, identities)
    await gateway.start()
    app[GATEWAY] = gateway
    try:
        yield
    finally:
        await gateway.aclose()


def create_app(settings: Settings, *, local_token: str | None = None) -> web.Application:
    """Build the application. `local_token` is the API token of the user `local`."""
    app = web.Application(
        client_max_size=CLIENT_MAX_SIZE,
        # Bodies are decoded by `read_json` (app/api/validation.py), where a body that is not
        # what its Content-Encoding says is a clean 400 instead of an error inside aiohttp.
        handler_args={"auto_decompress": False},
        middlewares=[request_log_middleware, error_middleware,
                     auth_middleware_factory(lambda request: request.app[AUTH])],
    )
    app[SETTINGS] = settings
    if local_token:
        app[LOCAL_TOKEN] = local_token
    # The one place the pipelines and characters in use are chosen (tests may replace them
    # before the app starts).
    register_offline_answers()
    install_pipelines(app)
    app.cleanup_ctx.extend([data_dir_ctx, redis_ctx, db_ctx, auth_ctx, llm_ctx])
    app.cleanup_ctx.append(runtime_ctx)
    app.cleanup_ctx.append(reminder_clock_ctx)
    app.cleanup_ctx.append(backup_ctx)
    app.cleanup_ctx.append(journal_ctx)
    app.cleanup_ctx.append(pixie_ctx)
    app.on_shutdown.append(close_websockets)
    setup_routes(app)
    return app
