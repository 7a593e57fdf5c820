"""Shared fixtures: a real app on a temp data dir with its own embedded Redis and SQLite."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import redis.asyncio as aioredis
from aiohttp import web
from aiohttp.test_utils import TestClient

from app import settings as settings_module
from app.redis_server import EmbeddedRedis
from app.server import create_app
from app.settings import Settings

TOKEN = "test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# `fake_model` / `start_fake_model`: a real fake model server (see tests/fakemodel.py).
pytest_plugins = ["tests.fakemodel"]


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No test reads the developer's data dir or NOVABERG_* variables."""
    for name in list(os.environ):
        if name.startswith(settings_module.ENV_PREFIX):
            monkeypatch.delenv(name)
    monkeypatch.setattr(settings_module, "default_data_dir", lambda: str(tmp_path / "default"))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    path.mkdir()
    return path


@pytest.fixture
def make_settings(data_dir: Path) -> Callable[..., Settings]:
    def _make(**overrides: object) -> Settings:
        return settings_module.defaults(data_dir=str(data_dir), **overrides)

    return _make


@pytest.fixture
def settings(make_settings: Callable[..., Settings]) -> Settings:
    return make_settings(llm_provider="offline")


@pytest.fixture
async def redis_client() -> AsyncIterator[aioredis.Redis]:
    """A real embedded Redis of its own (no app around it), as the app's client sees it.

    Its files live in a short temp dir of its own: a Unix socket path under a long test
    name's tmp_path can exceed the 107-byte limit.
    """
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
