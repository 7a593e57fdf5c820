"""The app factory and the wiring: the one place that builds the services and connects them.

`create_app` chooses what the app runs (the characters, which tests may replace before the app
starts) and lists one cleanup context per resource. They come up in order and go down in
reverse: data-dir lock → Redis (embedded or external) → SQLite → auth → model gateway (with the
offline model's answers, `app.wiring.purposes`) → the pipelines (their services and host; the
product's pipelines unless a test installed others in `app[PIPELINES]` before the start) →
runtime (hub, run slots, records, pair lock, keeper, recovery) → reminder clock → backups →
journal jobs → Pixie worker. Each service is built once, with what it uses, in an order that
needs no patching afterwards: what a turn reaches that starts only after the runtime (the
reminder clock, the Pixie worker) is a callable that exists from the start. The layers below
read no app key: what a service uses is handed to it here.

One module: the one place that builds and connects every service, one cleanup context per
resource, in the order they start.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import redis.asyncio as aioredis
from aiohttp import web

from app.api.app_keys import (
    ADMISSION,
    AUTH,
    BACKUPS,
    CHARACTER_BOOK,
    CHARACTER_STORE,
    CHARACTERS,
    DB,
    EGRESS_LOG,
    GATEWAY,
    HUB,
    INTERACTIONS,
    JOURNAL,
    JOURNAL_STORE,
    KEEPER,
    LISTS,
    LOCAL_TOKEN,
    LONG_TERM,
    MEDIA,
    PATH_RUN_OBSERVER,
    PIPELINE_HOST,
    PIPELINES,
    PIXIE,
    PRIVACY,
    PROFILES,
    RECORDS,
    REDIS,
    REDIS_INFO,
    REDIS_URL,
    REMINDER_CLOCK,
    REMINDERS,
    RUNTIME,
    SEARCHES,
    SESSION,
    SETTINGS,
    SHORT_TERM,
    RedisInfo,
)
from app.api.errors import error_middleware
from app.api.middleware import auth_middleware_factory
from app.api.request_log import request_log_middleware
from app.api.routes import setup_routes
from app.api.searches import SearchLimiter
from app.auth.credentials import Auth, LoginThrottle
from app.backup.service import BackupService
from app.characters.book import CharacterBook
from app.characters.store import CharacterStore
from app.consolidation.worker import PixieWorker
from app.core import log as logctx
from app.core.admission import RoundAdmission
from app.core.clock import zone_named
from app.core.descriptors import reserve_descriptors
from app.core.settings import Settings
from app.impulses.clock import ReminderClock
from app.journal.jobs import JournalJobs
from app.llm import Gateway
from app.llm.privacy import IdentityRegistry
from app.memory.said_today import SaidToday
from app.pipeline.context import Services
from app.pipeline.prompts import PromptLibrary
from app.pipeline.service import PipelineHost
from app.runtime.hub import Hub
from app.runtime.keeper import Keeper, heartbeat_gone
from app.runtime.markers import PairLocks
from app.runtime.records import Records
from app.runtime.runtime import Runtime
from app.runtime.slots import LocalSlots, RedisSlots
from app.storage.database import open_store, redact_url
from app.storage.datadir import DATABASE_FILE, REDIS_DIR, DataDirLock, make_private
from app.storage.embedded_redis import EmbeddedRedis
from app.storage.install import checked_install
from app.storage.redis_driver import connection_pool, unprotected_remote
from app.wiring.purposes import OFFLINE_ANSWERS, TASK_PURPOSES
from app.wiring.stores import build_egress_log, build_stores

log = logging.getLogger(__name__)

CLIENT_MAX_SIZE = 1024 * 1024  # a 20 000-char message is at most 80 KB of UTF-8 JSON
REDIS_POOL_WAIT_SECONDS = 30.0  # a command waits this long for a free connection, then fails


async def process_ctx(app: web.Application) -> AsyncIterator[None]:
    """What the process needs before it serves: room for its file descriptors (a table that
    grew while the loop was busy stalled it 10–17 ms, see app/core/descriptors.py)."""
    reserve_descriptors()
    yield


async def data_dir_ctx(app: web.Application) -> AsyncIterator[None]:
    lock = DataDirLock(app[SETTINGS].data_path)
    lock.acquire()
    yield
    lock.release()


def warn_of_open_redis(url: str | None) -> None:
    """One warning line when the external Redis at `url` is off this machine and given no
    password: whoever reaches its port reads and rewrites every user's live state (the login
    sessions there are stored by hash, the rest is not; docs/deploy.md). A warning, not a
    refusal: a private network may be the protection chosen on purpose."""
    if url and unprotected_remote(url):
        log.warning(
            "external Redis off this machine without a password: see docs/deploy.md",
            extra=logctx.fields(redis_url=redact_url(url)),
        )


async def redis_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    embedded: EmbeddedRedis | None = None
    if settings.redis_url:
        url = settings.redis_url
    else:
        embedded = EmbeddedRedis(settings.data_path / REDIS_DIR, settings.redis_appendfsync)
        embedded.start()
        url = embedded.url
    pool = connection_pool(
        url, max_connections=settings.redis_max_connections, wait_seconds=REDIS_POOL_WAIT_SECONDS
    )
    client = aioredis.Redis.from_pool(pool)
    try:
        info = await client.info("server")
        app[REDIS] = client
        app[REDIS_URL] = url
        app[REDIS_INFO] = RedisInfo(
            version=str(info["redis_version"]), embedded=embedded is not None
        )
        warn_of_open_redis(settings.redis_url)
        yield
    finally:
        await client.aclose()
        if embedded is not None:
            embedded.stop()


async def db_ctx(app: web.Application) -> AsyncIterator[None]:
    """The store, migrated, and of one install with the files dir (`app.storage.install`:
    a mismatch stops the start in one line)."""
    settings = app[SETTINGS]
    db = open_store(settings.data_path, settings.database_url, DATABASE_FILE)
    try:
        ran = await db.open()
        if ran:
            log.info("database migrated", extra=logctx.fields(migrations=ran))
        where = (
            redact_url(settings.database_url)
            if settings.database_url
            else str(settings.data_path / DATABASE_FILE)
        )
        install = await db.execute_write_fn(
            lambda conn: checked_install(conn, settings.files_path, where)
        )
        if settings.files_dir:  # else it is the data dir, made private with its lock
            make_private(settings.files_path, "files dir")
    except BaseException:
        await db.close()
        raise
    log.info("install", extra=logctx.fields(install=install, files_dir=str(settings.files_path)))
    app[DB] = db
    yield
    await db.close()


async def auth_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    throttle = LoginThrottle(
        app[REDIS],
        settings.login_free_failures,
        settings.login_max_delay_seconds,
        address_free_failures=settings.login_client_free_failures,
        name_max_delay=settings.login_name_max_delay_seconds,
    )
    app[AUTH] = Auth(
        app[DB],
        app[REDIS],
        app.get(LOCAL_TOKEN),
        settings.public_origin,
        settings.host,
        throttle=throttle,
    )
    yield


async def llm_ctx(app: web.Application) -> AsyncIterator[None]:
    """The model gateway; auto-detection of a local model server runs in its background. The
    egress log (what left this machine) writes in its own background task, and what it still
    holds is written after the gateway closed."""
    settings = app[SETTINGS]
    identities = IdentityRegistry(app[DB])
    # The deprecated identity list (setting, identities.txt) moves into the registry once.
    await identities.import_legacy(
        settings.data_path if settings.data_dir else None, settings.privacy_identities
    )
    app[PRIVACY] = identities
    zone = zone_named(settings.timezone)
    egress = build_egress_log(app[DB], zone)
    app[EGRESS_LOG] = egress
    gateway = Gateway(
        settings,
        identities,
        offline_answers=OFFLINE_ANSWERS,
        offline_memory=SaidToday(app[REDIS], zone),
        egress=egress.note,
        task_purposes=TASK_PURPOSES,
    )
    await egress.start()
    try:
        await gateway.start()
        app[GATEWAY] = gateway
        try:
            yield
        finally:
            await gateway.aclose()
    finally:
        await egress.stop()


async def stores_ctx(app: web.Application) -> AsyncIterator[None]:
    """Every store and service over Redis and SQLite, built once: the handlers, the
    pipelines, the runtime, the journal and the background loops share them (one
    `IdentityRegistry`, the gateway's, so an edit through the API is seen everywhere without
    a second cache). The house rule `test_stores_are_built_only_in_the_wiring` holds it."""
    stores = build_stores(app[SETTINGS], app[REDIS], app[DB], app[PRIVACY])
    app[SESSION] = stores.session
    app[SHORT_TERM] = stores.short_term
    app[LONG_TERM] = stores.long_term
    app[REMINDERS] = stores.reminders
    app[LISTS] = stores.lists
    app[INTERACTIONS] = stores.interactions
    app[PROFILES] = stores.profiles
    app[JOURNAL_STORE] = stores.journal
    app[MEDIA] = stores.media
    yield


def install_characters(app: web.Application) -> None:
    """The character book (built-in `nova` plus the data dir's definitions) and the catalog the
    API and the runtime consult: chosen when the app is built, so tests may replace the
    catalog before it starts."""
    book = CharacterBook(app[SETTINGS])
    app[CHARACTER_BOOK] = book
    app[CHARACTER_STORE] = CharacterStore(book)
    app[CHARACTERS] = book.catalog()


class Wakeable(Protocol):
    def wake(self) -> None: ...


def wake_of(app: web.Application, key: web.AppKey[Any]) -> Callable[[], None]:
    """Wakes the background loop at `key` (the reminder clock, the Pixie worker): a callable
    that exists before the loop does. Before the loop starts there is nothing to wake — its
    first round looks at everything anyway."""

    def wake() -> None:
        loop: Wakeable | None = app.get(key)
        if loop is not None:
            loop.wake()

    return wake


def memories_used_of(app: web.Application) -> Callable[[list[str], float], None]:
    """Tells the Pixie worker which long-term memories a prompt used (it writes their
    `last_used_at`); before it runs the marks are dropped (they only weigh recency)."""

    def memories_used(memory_ids: list[str], at: float) -> None:
        worker = app.get(PIXIE)
        if worker is not None:
            worker.note_used(memory_ids, at)

    return memories_used


async def pipelines_ctx(app: web.Application) -> AsyncIterator[None]:
    """The pipelines' services and host, once Redis, SQLite and the gateway are up and before
    the runtime's recovery may run a turn. The product's pipelines are the ones in use unless
    a test or bench installed others (`app[PIPELINES]`) before the start."""
    settings = app[SETTINGS]
    services = Services(
        settings=settings,
        redis=app[REDIS],
        db=app[DB],
        characters=app[CHARACTER_BOOK],
        prompts=PromptLibrary(settings),
        memory=app[SESSION],
        short_term=app[SHORT_TERM],
        reminders=app[REMINDERS],
        lists=app[LISTS],
        long_term=app[LONG_TERM],
        interactions=app[INTERACTIONS],
        wake_clock=wake_of(app, REMINDER_CLOCK),
        wake_pixie=wake_of(app, PIXIE),
        memories_used=memories_used_of(app),
    )
    host = PipelineHost(services, app[GATEWAY], on_path_run=app.get(PATH_RUN_OBSERVER))
    app[PIPELINE_HOST] = host
    if PIPELINES not in app:
        app[PIPELINES] = host.pipelines()
    yield


async def runtime_ctx(app: web.Application) -> AsyncIterator[None]:
    """Hub, run slots, records, pair lock, runtime, keeper, recovery — up in that order,
    down in reverse.

    Recovery runs after the heartbeat is written and before the app serves a request, so a
    restarted process first closes or retries what a crash left open, then accepts new
    input. With an external Redis (`redis_url`) the hub fans out through Redis, the run slots
    of an endpoint are shared through Redis by the processes using it, and a wake listener
    plus the death watch and the orphan sweep let several processes share the pairs.
    """
    settings = app[SETTINGS]
    redis = app[REDIS]
    distributed = settings.redis_url is not None
    hub = Hub(
        settings.ws_send_queue,
        redis if distributed else None,
        max_per_user=settings.max_sockets_per_user,
        credentials_valid=app[AUTH].valid,
    )
    instance_id = uuid.uuid4().hex[:12]
    slots = (
        RedisSlots(
            redis,
            settings.graph_slots,
            settings.lock_wait_timeout,
            lease_seconds=3 * settings.turn_marker_refresh_seconds,
            instance_id=instance_id,
        )
        if distributed
        else LocalSlots(settings.graph_slots, settings.lock_wait_timeout)
    )
    records = Records(redis, settings.record_ttl, instance_id)
    locks = PairLocks(redis, instance_id, settings.turn_marker_ttl)
    runtime = Runtime(
        redis=redis,
        settings=settings,
        memory=app[SESSION],
        hub=hub,
        slots=slots,
        records=records,
        locks=locks,
        pipelines=app[PIPELINES],
        gateway=lambda: app.get(GATEWAY),
        instance_id=instance_id,
    )

    async def sweep() -> None:
        """What a dead process left: its turns and markers, then its journal jobs."""
        await runtime.recover(only_dead_owners=True)
        jobs = app.get(JOURNAL)
        if jobs is not None:
            await jobs.recover()

    keeper = Keeper(
        redis=redis,
        settings=settings,
        instance_id=instance_id,
        locks=locks,
        slots=slots,
        wake_pair=runtime.notify if distributed else None,
        sweep_orphans=sweep if distributed else None,
    )
    app[HUB] = hub
    app[RUNTIME] = runtime
    app[RECORDS] = records
    app[KEEPER] = keeper
    await hub.start()
    await slots.start()
    await keeper.start()
    await records.open()
    report = await runtime.recover(only_dead_owners=distributed)
    freeze_startup_objects()
    log.info(
        "runtime started",
        extra=logctx.fields(
            instance=runtime.instance_id,
            distributed=distributed,
            graph_slots=settings.graph_slots,
            woken_pairs=report.woken_pairs,
        ),
    )
    THREAD_SWITCHES.quicken()
    try:
        yield
    finally:
        gc.unfreeze()
        THREAD_SWITCHES.release()
        await runtime.stop()
        await keeper.stop()
        await slots.stop()
        await hub.stop()


# How long a thread may run Python code while another waits for the GIL (CPython's default:
# 5 ms). The loop takes the GIL back after every socket call, so while a worker thread computes
# (a lorebook's matcher, a search, a photo's pixels) one answer of another user's waited a few
# of those 5 ms: GET /api/health up to ~45 ms during a big book's first turn, ~15 ms at 1 ms
# (bench/uploads.py, issue 38). Set while a runtime runs, the old value back after the last.
SWITCH_INTERVAL_S = 0.001


class ThreadSwitches:
    """The process's switch interval at `SWITCH_INTERVAL_S` while any runtime of the process
    runs (the tests run several at once), the interval it had before once the last stops."""

    def __init__(self) -> None:
        self.runtimes = 0
        self.before = sys.getswitchinterval()

    def quicken(self) -> None:
        if self.runtimes == 0:
            self.before = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        self.runtimes += 1

    def release(self) -> None:
        self.runtimes -= 1
        if self.runtimes == 0:
            sys.setswitchinterval(self.before)


THREAD_SWITCHES = ThreadSwitches()


def freeze_startup_objects() -> None:
    """Keep the garbage collector's full sweeps short (the loop must not stall, design §10).

    A full collection walks every tracked object; the imports and the start-up leave some
    hundred thousand of them, and one such walk took ~70 ms in the middle of a busy loop.
    `gc.freeze` moves what exists now out of the collector's walks (it stays alive, as it
    would anyway); everything allocated later is collected as usual. Undone at shutdown so a
    process that builds several apps (the tests) does not keep their objects.
    """
    gc.collect()
    gc.freeze()


async def close_websockets(app: web.Application) -> None:
    """on_shutdown: close every WebSocket so the server does not wait for them."""
    hub = app.get(HUB)
    if hub is not None:
        await hub.close_all()


class BackgroundTask(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


@contextlib.asynccontextmanager
async def running(task: BackgroundTask) -> AsyncIterator[None]:
    """A background task started on entry and stopped on the way out, whatever happens."""
    await task.start()
    try:
        yield
    finally:
        await task.stop()


async def reminder_clock_ctx(app: web.Application) -> AsyncIterator[None]:
    """The reminder clock, one background task, started after the runtime (it submits
    impulses through it) and stopped before it."""
    services = app[PIPELINE_HOST].services
    clock = ReminderClock(
        services.reminders,
        app[SETTINGS],
        app[CHARACTER_BOOK],
        app[RUNTIME].submit_impulse,
        long_term=services.long_term,
    )
    app[REMINDER_CLOCK] = clock
    async with running(clock):
        yield


async def backup_ctx(app: web.Application) -> AsyncIterator[None]:
    """The backup service and, with `backup_daily`, its daily loop (kept, cancelled, awaited)."""
    service = BackupService(app[SETTINGS], app[REDIS_URL])
    app[BACKUPS] = service
    task = (
        asyncio.create_task(service.daily_loop(), name="daily-backup")
        if app[SETTINGS].backup_daily
        else None
    )
    try:
        yield
    finally:
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await service.close()


async def journal_ctx(app: web.Application) -> AsyncIterator[None]:
    """The journal's job runner: jobs a dead process left open are recovered at start (and
    by the death watch's sweep), running jobs cancelled and marked failed on stop. The jobs'
    owner is the runtime's instance; with an external Redis another owner is dead when its
    heartbeat is gone, with the embedded one (one process owns the data dir) it is."""
    hub = app.get(HUB)
    runtime = app[RUNTIME]
    owner_dead = (
        functools.partial(heartbeat_gone, app[REDIS])
        if app[SETTINGS].redis_url is not None
        else None
    )
    jobs = JournalJobs(
        app[JOURNAL_STORE],
        app[PROFILES],
        app[GATEWAY],
        app[SETTINGS],
        hub.publish if hub is not None else None,
        owner=runtime.instance_id,
        owner_dead=owner_dead,
    )
    await jobs.recover()
    app[JOURNAL] = jobs
    try:
        yield
    finally:
        await jobs.close()


async def pixie_ctx(app: web.Application) -> AsyncIterator[None]:
    """The Pixie worker (long-term memory), one background task, started after the runtime
    (it shares the runtime's run slots, at the lowest priority) and stopped before it."""
    host = app[PIPELINE_HOST]
    runtime = app[RUNTIME]
    worker = PixieWorker(
        redis=app[REDIS],
        settings=app[SETTINGS],
        slots=runtime.slots,
        long_term=host.services.long_term,
        context_for=host.background_context,
        instance_id=runtime.instance_id,
    )
    app[PIXIE] = worker
    async with running(worker):
        yield


def create_app(settings: Settings, *, local_token: str | None = None) -> web.Application:
    """Build the application. `local_token` is the API token of the user `local`."""
    app = web.Application(
        client_max_size=CLIENT_MAX_SIZE,
        # Bodies are decoded by `read_json` (app/api/validation.py), where a body that is not
        # what its Content-Encoding says is a clean 400 instead of an error inside aiohttp.
        handler_args={"auto_decompress": False},
        middlewares=[
            request_log_middleware,
            error_middleware,
            auth_middleware_factory(lambda request: request.app[AUTH]),
        ],
    )
    app[SETTINGS] = settings
    app[ADMISSION] = RoundAdmission()
    # One limiter for every route that searches (history, memories): each user's searches.
    app[SEARCHES] = SearchLimiter()
    if local_token:
        app[LOCAL_TOKEN] = local_token
    # The one place the characters in use are chosen (tests may replace them, and the
    # pipelines, `app[PIPELINES]`, before the app starts).
    install_characters(app)
    app.cleanup_ctx.extend(
        [process_ctx, data_dir_ctx, redis_ctx, db_ctx, auth_ctx, llm_ctx, stores_ctx]
    )
    app.cleanup_ctx.append(pipelines_ctx)
    app.cleanup_ctx.append(runtime_ctx)
    app.cleanup_ctx.append(reminder_clock_ctx)
    app.cleanup_ctx.append(backup_ctx)
    app.cleanup_ctx.append(journal_ctx)
    app.cleanup_ctx.append(pixie_ctx)
    app.on_shutdown.append(close_websockets)
    setup_routes(app)
    return app
