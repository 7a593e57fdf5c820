"""The data dir: checked before anything is written, and locked to one running app.

Two apps on one data dir would run two Redis servers over one AOF and two SQLite writers;
an exclusive `flock` on `novaberg.lock` makes the second one stop with a clear message.
The kernel drops the lock when the process dies, so a crash never leaves it stale.

Its layout: the SQLite database (`DATABASE_FILE`) and the embedded Redis's folder
(`REDIS_DIR`), named here for the app, the command line and backup alike.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_FILE = "novaberg.lock"
DATABASE_FILE = "novaberg.sqlite3"
REDIS_DIR = "redis"


class DataDirError(RuntimeError):
    pass


class DataDirInUse(DataDirError):
    """Another live process holds the data dir's lock."""


def check_writable(path: Path) -> None:
    """Fail with a one-line message if `path` cannot be created or written; writes nothing
    when the answer is no."""
    existing = path
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise DataDirError(f"data dir {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DataDirError(f"data dir {path}: {existing} is not writable")


class DataDirLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        check_writable(self.path)
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise DataDirInUse(f"data dir {self.path} is in use by pid {holder}") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
