"""The data a command-line backup or restore works on, whether or not the app is running.

`open_data_dir` takes the data dir's lock when it can (no app running: the command owns the
data) and reports whether an app holds it. `redis_of` gives a Redis client for the data:
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
def redis_of(settings: Settings, *, app_running: bool,
             appendfsync: str = "no") -> Iterator[redis.Redis]:
    if settings.redis_url:
        client = redis_snapshot.connect(settings.redis_url)
        try:
            yield client
        finally:
            client.close()
        return
    directory = redis_dir(settings.data_path)
    if app_running:
        server = EmbeddedRedis(directory)
        if not server.socket_path.exists():
            raise BackupError("the running app uses no embedded Redis here; give the same "
                              "--redis-url as the app")
        client = redis_snapshot.connect(server.url)
        try:
            yield client
        finally:
            client.close()
        return
    server = EmbeddedRedis(directory, appendfsync=appendfsync)
    server.start()
    client = redis_snapshot.connect(server.url)
    try:
        yield client
    finally:
        client.close()
        server.stop()
