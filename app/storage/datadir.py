"""The data dir: checked before anything is written, and locked to one running app.

Two apps on one data dir would run two Redis servers over one AOF and two SQLite writers;
an exclusive `flock` on `novaberg.lock` makes the second one stop with a clear message.
The kernel drops the lock when the process dies, so a crash never leaves it stale.

Its layout: the SQLite database (`DATABASE_FILE`) and the embedded Redis's folder
(`REDIS_DIR`), named here for the app, the command line and backup alike.

The app that holds the lock and serves writes `INSTANCE_FILE` (mode 0600, never the API
token): its pid, its URL, its mode and, in desktop mode, a secret of its own that asks it for
a start link (`POST /api/launch-link`). A second start of the binary on the same data dir
reads it (`running_instance`) and opens a tab on the running app instead of failing; another
user of the machine cannot read it, and a file that another user could have written is not
believed.
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

LOCK_FILE = "novaberg.lock"
INSTANCE_FILE = "instance.json"
PRIVATE_FILE_MODE = 0o600
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
            holder = _written_pid(fd)
            os.close(fd)
            raise DataDirInUse(f"data dir {self.path} is in use by pid "
                               f"{holder or 'another process'}") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def restore_command(data_path: Path, folder: Path, *, yes: bool = False) -> str:
    """The one command line that restores the backup `folder` into `data_path` (quoted for a
    POSIX shell), as the settings dialog, the API and the restore's own messages show it."""
    words = ["novaberg", "--data-dir", str(data_path), "restore", str(folder)]
    return shlex.join(words + (["--yes"] if yes else []))


def _written_pid(fd: int) -> int | None:
    """The pid the lock's holder wrote into the lock file (None while it has not)."""
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None


def lock_holder(path: Path) -> int | None:
    """The pid of the live process that holds `path`'s lock (0 when it has not written its
    pid yet), or None when no process holds it. Takes no lock that a starting app could
    trip over for longer than this call."""
    try:
        fd = os.open(path / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None  # no lock file (or none we may read): nobody runs here
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _written_pid(fd) or 0
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class Instance:
    """What the serving app tells a second start about itself (`INSTANCE_FILE`)."""

    pid: int
    url: str  # http://127.0.0.1:PORT
    mode: Literal["desktop", "headless"]
    launch_secret: str | None  # desktop mode only: asks the app for a start link


def write_instance(path: Path, instance: Instance) -> None:
    """Write `INSTANCE_FILE` anew, mode 0600 from its first byte, through a temporary name
    (a reader never sees half of it; no link is followed)."""
    target = path / INSTANCE_FILE
    temporary = path / f".{INSTANCE_FILE}.{os.getpid()}"
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"pid": instance.pid, "url": instance.url, "mode": instance.mode,
                       "launch_secret": instance.launch_secret}, handle)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def remove_instance(path: Path, pid: int) -> None:
    """Remove `INSTANCE_FILE` if it is still the one process `pid` wrote."""
    found = read_instance(path)
    if found is not None and found.pid == pid:
        (path / INSTANCE_FILE).unlink(missing_ok=True)


def read_instance(path: Path) -> Instance | None:
    """`INSTANCE_FILE` as written, or None: absent, unreadable, not a plain file, not this
    user's own, writable or readable by others, or not what `write_instance` writes."""
    try:
        fd = os.open(path / INSTANCE_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                or stat.S_IMODE(info.st_mode) & 0o077):
            return None
        document = json.loads(os.read(fd, 4096).decode())
        instance = Instance(int(document["pid"]), str(document["url"]), document["mode"],
                            document.get("launch_secret"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(fd)
    if instance.mode not in ("desktop", "headless") or not instance.url.startswith("http://"):
        return None
    return instance


def running_instance(path: Path) -> Instance | None:
    """The app that holds `path`'s lock now, as its `INSTANCE_FILE` says — only when the
    file's pid is the lock holder's (a file left by an app that died is not believed)."""
    holder = lock_holder(path)
    if not holder:
        return None
    instance = read_instance(path)
    return instance if instance is not None and instance.pid == holder else None
