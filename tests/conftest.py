"""Shared fixtures: a real app on a temp data dir with its own SQLite and a fresh database of
the session's one redis-server as its embedded Redis (`SessionRedis`).

`--engine=postgresql` (`make test-postgres`) puts the durable store of every app and every
`make_database` in a fresh database of the session's one PostgreSQL server instead
(tests/postgres_support.py); the default, `sqlite`, is what `make test` runs."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as sync_redis
import redis.asyncio as aioredis
from aiohttp import web
from aiohttp.test_utils import TestClient

from app.core import log
from app.core import settings as settings_module
from app.core.lanes import LaneLoop
from app.core.settings import Settings
from app.storage.database import Database, PostgresDatabase
from app.storage.embedded_redis import EmbeddedRedis
from app.wiring import server as server_module
from app.wiring.server import create_app
from tests.postgres_support import ENGINES, PostgresServer

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# `fake_model` / `start_fake_model`: a real fake model server (see tests/fakemodel.py).
pytest_plugins = ["tests.fakemodel"]


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A test that runs `novaberg` in-process configures the root logger onto the stream the
    test captured; left so, a later test's lines go to a closed file ("Logging error" in its
    captured stderr) — so each test ends with the logging it began with."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    if root.handlers != handlers:
        log.stop()
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                          request: pytest.FixtureRequest) -> None:
    """No test reads the developer's data dir or NOVABERG_* variables. Under
    `--engine=postgresql` the one it gets is `NOVABERG_DATABASE_URL`, the test's database, so
    the CLI run in-process or as a subprocess uses the store its apps use."""
    for name in list(os.environ):
        if name.startswith(settings_module.ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.setattr(settings_module, "default_data_dir", lambda: str(tmp_path / "default"))
    if engine(request.config) == "postgresql":
        monkeypatch.setenv(f"{settings_module.ENV_PREFIX}DATABASE_URL",
                           str(request.getfixturevalue("database_url")))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir(mode=0o700)  # as the app makes it (one open to others is tightened, with a warning)
    return path


def pytest_asyncio_loop_factories(config: pytest.Config, item: pytest.Item) -> dict:
    """Every async test runs on the loop the server runs on (app.core.lanes)."""
    return {"lanes": LaneLoop}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--engine", choices=ENGINES, default="sqlite",
                     help="the durable store's engine the apps and `make_database` use")


def engine(config: pytest.Config) -> str:
    return str(config.getoption("--engine"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    other = POSTGRES_ONLY if engine(config) == "sqlite" else SQLITE_ONLY
    kept = [item for item in items if item.get_closest_marker(other) is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL server (started on first use; a failure if it cannot)."""
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh database of the session's server for this test, dropped after it."""
    name = postgres_server.new_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop(name)


@pytest.fixture
def database_url(request: pytest.FixtureRequest) -> str | None:
    """The test's PostgreSQL database under `--engine=postgresql`, else None (SQLite)."""
    if engine(request.config) != "postgresql":
        return None
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def other_store(request: pytest.FixtureRequest) -> Iterator[Callable[[], list[str]]]:
    """`other_store()`: the command-line options that give another data dir a store apart
    from the test's — none on SQLite (each data dir has its own file); under
    `--engine=postgresql` `--database-url` of a fresh database of the session's server
    (dropped after the test), where the test's own is in the environment for every data dir."""
    if engine(request.config) != "postgresql":
        yield lambda: []
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    made: list[str] = []

    def _make() -> list[str]:
        made.append(server.new_database())
        return ["--database-url", server.url(made[-1])]

    try:
        yield _make
    finally:
        for name in made:
            server.drop(name)


@pytest.fixture
def make_database(database_url: str | None) -> Callable[[Path], Database]:
    """A store on the test's engine: the SQLite file at `path`, or the test's PostgreSQL
    database (the same one for every call of a test: one shared store, as processes see it)."""
    def _make(path: Path) -> Database:
        return PostgresDatabase(database_url) if database_url else Database(path)

    return _make


@pytest.fixture
def in_store(make_settings: Callable[..., Settings]) -> Callable[[], Any]:
    """`in_store()`: a transaction on the store the test's apps use, whatever the engine."""
    from tests.store import store_transaction

    return lambda: store_transaction(make_settings())


@pytest.fixture
def make_settings(data_dir: Path, database_url: str | None) -> Callable[..., Settings]:
    def _make(**overrides: object) -> Settings:
        if database_url:
            overrides.setdefault("database_url", database_url)
        return settings_module.defaults(data_dir=str(data_dir), **overrides)

    return _make


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(llm_provider="offline")


OWN_REDIS = "own_redis"
SESSION_DATABASES = 16  # redis-server's default `databases`; a test opens far fewer


SQLITE_ONLY = "sqlite_only"
POSTGRES_ONLY = "postgres_only"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{SQLITE_ONLY}(reason): the test holds what only the SQLite file has (its "
        "bytes on disk, a schema of before a migration); `--engine=postgresql` deselects it "
        "(it is not counted there, and not skipped)")
    config.addinivalue_line(
        "markers", f"{POSTGRES_ONLY}: the test needs a PostgreSQL server beside SQLite (moving "
        "a store between the engines, processes sharing one); only `--engine=postgresql` "
        "(`make test-postgres`) selects it, so `make test` starts no PostgreSQL")
    config.addinivalue_line(
        "markers", f"{OWN_REDIS}: the test's apps and `redis_client` start redis-servers of "
        "their own instead of using databases of the session's one (tests/conftest.py "
        "`SessionRedis`)")


class SessionRedis:
    """One redis-server for the whole test session (under xdist: one per worker process),
    started on first use. Each test gets fresh numbered databases of it: the first one a
    test asks for flushes all of them (FLUSHALL), so nothing a test wrote can reach another.

    It serves the in-process apps (create_app) in place of their embedded Redis — see
    `_session_redis_for_apps` — and `redis_client`; that saves a redis-server start and stop
    (about 0.13 s together) per app and per `redis_client`. Tests keep servers of their own,
    by the `own_redis` marker, where the server itself is under test or is handed on:

    - backup and restore (tests/backup/test_backup.py, the restore in tests/journal/test_export.py):
      a backup BGSAVEs into the data dir's `redis/` and a restore loads files there, both
      through the embedded server of the data dir;
    - the CLI commands that start the data dir's embedded Redis next to an app of the same
      test (`user delete` in tests/wiring/test_cli_accounts.py);
    - multiprocess tests handing `redis_client`'s socket on as the external Redis (two
      tests of tests/runtime/test_multiprocess.py, the kill -9 test in
      tests/runtime/test_kill_multiprocess.py): that URL names no database, and their pub/sub
      channels are server-wide, not per database.

    Subprocess apps (tests/procs.py `AppProcess`: the kill -9 tests, the CLI tests) always
    start their own on their data dir: the stand-in only replaces the class in this process.
    """

    def __init__(self) -> None:
        self._directory: Path | None = None
        self._server: EmbeddedRedis | None = None
        self._given: dict[object, int] = {}  # what asked (a data dir's redis/) -> database

    def _started(self) -> EmbeddedRedis:
        if self._server is None:
            self._directory = Path(tempfile.mkdtemp(prefix="nb-redis-"))
            # No AOF, no RDB: nothing of it needs to outlive the session.
            self._server = EmbeddedRedis(self._directory, appendfsync="no", appendonly=False)
            self._server.start()
        return self._server

    def begin_test(self) -> None:
        self._given.clear()

    def url(self, owner: object) -> str:
        """The URL of `owner`'s database, the same for the same owner within one test."""
        server = self._started()
        if owner not in self._given:
            if len(self._given) >= SESSION_DATABASES:
                raise RuntimeError(f"a test asked for more than {SESSION_DATABASES} Redis "
                                   f"databases; mark it {OWN_REDIS}")
            if not self._given:
                with sync_redis.Redis(unix_socket_path=str(server.socket_path)) as flush:
                    flush.flushall()
            self._given[owner] = len(self._given)
        return f"{server.url}?db={self._given[owner]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


@pytest.fixture(scope="session")
def session_redis() -> Iterator[SessionRedis]:
    """The session's redis-server (`SessionRedis`: which tests keep their own, and why)."""
    shared = SessionRedis()
    try:
        yield shared
    finally:
        shared.stop()


def _own_redis(request: pytest.FixtureRequest) -> bool:
    return request.node.get_closest_marker(OWN_REDIS) is not None


@pytest.fixture(autouse=True)
def _session_redis_for_apps(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                            session_redis: SessionRedis) -> Iterator[None]:
    """In-process apps use a database of the session's redis-server as their embedded Redis
    (still `embedded` to the app: one process, local run slots, no pub/sub). The database
    follows the data dir, so an app restarted on it finds its keys and an app on another
    data dir starts empty.

    A test that also starts a real embedded Redis on a data dir one of its apps used would
    see two different stores; it fails here and must be marked `own_redis`."""
    session_redis.begin_test()
    if _own_redis(request):
        yield
        return
    served: set[Path] = set()
    real: set[Path] = set()

    class SessionDatabase:
        """Stands in for `EmbeddedRedis` in `app.wiring.server`: start and stop touch no process."""

        def __init__(self, directory: Path, appendfsync: str = "always", **_: object) -> None:
            self.directory = directory
            self.url = session_redis.url(directory.resolve())

        def start(self) -> None:
            self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            served.add(self.directory.resolve())

        def stop(self) -> None:
            pass

    real_start = EmbeddedRedis.start

    def start_and_note(server: EmbeddedRedis) -> None:
        real.add(server.directory.resolve())
        real_start(server)

    monkeypatch.setattr(server_module, "EmbeddedRedis", SessionDatabase)
    monkeypatch.setattr(EmbeddedRedis, "start", start_and_note)
    yield
    if served & real:
        pytest.fail(f"{sorted(map(str, served & real))}: served by the session's Redis and "
                    f"by an embedded one started in the test; mark the test {OWN_REDIS}")


@pytest.fixture
async def redis_client(request: pytest.FixtureRequest,
                       session_redis: SessionRedis) -> AsyncIterator[aioredis.Redis]:
    """A real Redis of its own (no app around it), as the app's client sees it: a fresh
    database of the session's server, or with `own_redis` a server of its own.

    An own server's files live in a short temp dir: a Unix socket path under a long test
    name's tmp_path can exceed the 107-byte limit.
    """
    if not _own_redis(request):
        client = aioredis.Redis.from_url(session_redis.url("redis_client"), decode_responses=True)
        try:
            yield client
        finally:
            await client.aclose()
        return
    directory = Path(tempfile.mkdtemp(prefix="nb-redis-"))
    server = EmbeddedRedis(directory, appendfsync="no")
    server.start()
    client = aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
    try:
        yield client
    finally:
        await client.aclose()
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def app(settings: Settings) -> web.Application:
    return create_app(settings, local_token=TOKEN)


@pytest.fixture
async def client(aiohttp_client: Callable[..., TestClient], app: web.Application) -> TestClient:
    return await aiohttp_client(app)
