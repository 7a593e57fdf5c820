"""The data a command-line backup or restore works on, whether or not the app is running.

`open_data_dir` takes the data dir's lock when it can (no app running: the command owns the
data) and reports whether an app holds it. `redis_of` gives a Redis client for the data
(`redis_url_of` its URL, for an asyncio client):
the external Redis of `--redis-url`, the running app's embedded Redis through its socket,
or — when no app runs — the embedded Redis started by the command itself on the data dir's
files and stopped again afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from app.backup import redis_snapshot
from app.backup.archive import BackupError
from app.core.settings import Settings
from app.storage.datadir import REDIS_DIR, DataDirInUse, DataDirLock
from app.storage.embedded_redis import EmbeddedRedis


def redis_dir(data_path: Path) -> Path:
    return data_path / REDIS_DIR


@contextmanager
def open_data_dir(data_path: Path, *, restoring: bool = False) -> Iterator[str | None]:
    """Yields why the data dir is busy ("data dir … is in use by pid N") when an app holds
    it, None when this command holds its lock (released on exit). A restore that was cut off
    refuses the lock (`RestoreCutOff`) except to a restore (`restoring`)."""
    lock = DataDirLock(data_path)
    try:
        lock.acquire(restoring=restoring)
    except DataDirInUse as exc:
        yield str(exc)
        return
    try:
        yield None
    finally:
        lock.release()


@contextmanager
def redis_url_of(
    settings: Settings, *, app_running: bool, appendfsync: str = "no"
) -> Iterator[str]:
    """The URL of the data's Redis, for as long as the block runs (an embedded one this
    command started is stopped after it)."""
    if settings.redis_url:
        yield settings.redis_url
        return
    directory = redis_dir(settings.data_path)
    if app_running:
        server = EmbeddedRedis(directory)
        if not server.socket_path.exists():
            raise BackupError(
                "the running app uses no embedded Redis here; give the same --redis-url as the app"
            )
        yield server.url
        return
    server = EmbeddedRedis(directory, appendfsync=appendfsync)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@contextmanager
def redis_of(
    settings: Settings, *, app_running: bool, appendfsync: str = "no"
) -> Iterator[redis.Redis]:
    with redis_url_of(settings, app_running=app_running, appendfsync=appendfsync) as url:
        client = redis_snapshot.connect(url)
        try:
            yield client
        finally:
            client.close()
