"""The data dir: checked before anything is written, and locked to one running app.

Two apps on one data dir would run two Redis servers over one AOF and two SQLite writers;
an exclusive `flock` on `novaberg.lock` makes the second one stop with a clear message.
The kernel drops the lock when the process dies, so a crash never leaves it stale.

Its layout: the SQLite database (`DATABASE_FILE`) and the embedded Redis's folder
(`REDIS_DIR`), named here for the app, the command line and backup alike.

The data dir holds password hashes and every message: it is its owner's alone (mode 0700). A
data dir that others may read is tightened when it is locked (a warning says so); one that
belongs to another user is refused.

A restore (`app.backup.restore`) writes `RESTORE_MARKER` before it changes anything and
removes it when it is done. Whoever takes the lock and finds the marker learns that a restore
was cut off (`kill -9`, a power cut): cut off while it was only making its safety copy, the
data is as it was and the partial copy is removed; cut off later, the data is half restored,
and the lock is refused with the two ways on, in one line: finish the restore, or go back to
the safety copy. Only a restore itself (`restoring=True`) takes the lock then.

The app that holds the lock and serves writes `INSTANCE_FILE` (mode 0600, never the API
token): its pid, its URL, its mode and, in desktop mode, a secret of its own that asks it for
a start link (`POST /api/launch-link`). A second start of the binary on the same data dir
reads it (`running_instance`) and opens a tab on the running app instead of failing; another
user of the machine cannot read it, and a file that another user could have written is not
believed.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import logging
import os
import shlex
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from app.core.log import fields
from app.storage.files import fsync_dir, private_file

log = logging.getLogger(__name__)

LOCK_FILE = "novaberg.lock"
INSTANCE_FILE = "instance.json"
DATABASE_FILE = "novaberg.sqlite3"
REDIS_DIR = "redis"
RESTORE_MARKER = "restore-in-progress.json"
SAFETY_PREFIX = "restore-safety-"  # the restore's copy of the data from before, in the data dir
PRIVATE_DIR_MODE = 0o700


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


class RestoreCutOff(DataDirError):
    """A restore was cut off after it began to replace the data (see the module)."""


def make_private(path: Path, what: str = "data dir") -> None:
    """Create the data dir (mode 0700), or tighten an existing one that others may enter;
    `DataDirError` when it belongs to another user. The files dir (`what`) is held to the
    same rule: another local user who may write there could plant a character every user
    lists."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise DataDirError(
            f"{what} {path} belongs to another user (uid {info.st_uid}); use a {what} of your own"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        path.chmod(PRIVATE_DIR_MODE)
        log.warning(
            f"{what} {path} was open to others (mode {mode:o}); tightened to 0700",
            extra=fields(dir=str(path), mode=f"{mode:o}"),
        )


@dataclass(frozen=True, slots=True)
class RestoreMarker:
    """What a restore in progress notes in the data dir before it changes anything."""

    backup: Path  # what is being restored
    safety: Path  # where the data from before is kept (a backup folder)
    phase: Literal["saving", "installing"]  # making the safety copy | replacing the data
    started_at: str

    def write(self, data_path: Path) -> None:
        document = {
            "backup": str(self.backup),
            "safety": str(self.safety),
            "phase": self.phase,
            "started_at": self.started_at,
        }
        with private_file(data_path / RESTORE_MARKER) as handle:
            handle.write(json.dumps(document, indent=2).encode() + b"\n")

    @classmethod
    def begin(cls, backup: Path, safety: Path) -> RestoreMarker:
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return cls(backup, safety, "saving", now)

    def finish_command(self, data_path: Path) -> str:
        return restore_command(data_path, self.backup, yes=True)

    def back_command(self, data_path: Path) -> str:
        return restore_command(data_path, self.safety, yes=True)


def read_restore_marker(data_path: Path) -> RestoreMarker | None:
    """The marker of a restore that did not finish, or None. A marker that cannot be read
    still says that a restore was cut off (its paths unknown)."""
    path = data_path / RESTORE_MARKER
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        phase = document["phase"]
        if phase not in ("saving", "installing"):
            raise ValueError(phase)
        return RestoreMarker(
            Path(document["backup"]),
            Path(document["safety"]),
            phase,
            str(document.get("started_at", "")),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return RestoreMarker(
            Path("<the backup>"), Path(f"<{data_path}/{SAFETY_PREFIX}…>"), "installing", ""
        )


def remove_restore_marker(data_path: Path) -> None:
    (data_path / RESTORE_MARKER).unlink(missing_ok=True)
    fsync_dir(data_path)


def cut_off_message(data_path: Path, marker: RestoreMarker) -> str:
    """One line: what happened, and the two commands that lead on."""
    return (
        f"data dir {data_path}: a restore of {marker.backup} was cut off half-way"
        f"{' (started ' + marker.started_at + ')' if marker.started_at else ''}, so the "
        f"data is half restored; finish it: {marker.finish_command(data_path)} — or go "
        f"back to the data from before: {marker.back_command(data_path)}"
    )


def undo_saving(data_path: Path, marker: RestoreMarker) -> None:
    """A restore cut off while it made its safety copy changed no data: remove the partial
    copy (only a safety folder of this data dir) and the marker."""
    safety = marker.safety
    if safety.parent == data_path and safety.name.startswith(SAFETY_PREFIX):
        shutil.rmtree(safety, ignore_errors=True)
    remove_restore_marker(data_path)
    log.warning(
        f"a restore of {marker.backup} was cut off before it changed any data; its "
        f"partial safety copy {safety} was removed, the data is as it was",
        extra=fields(backup=str(marker.backup), safety=str(safety)),
    )


class DataDirLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, *, restoring: bool = False) -> None:
        """Take the lock (`DataDirInUse` while another process holds it). A restore that was
        cut off: see the module; `restoring`: the caller is a restore, which finishes or
        undoes it."""
        check_writable(self.path)
        make_private(self.path)
        fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _written_pid(fd)
            os.close(fd)
            raise DataDirInUse(
                f"data dir {self.path} is in use by pid {holder or 'another process'}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        marker = read_restore_marker(self.path)
        if marker is None or restoring:
            return
        if marker.phase == "saving":
            undo_saving(self.path, marker)
            return
        self.release()
        raise RestoreCutOff(cut_off_message(self.path, marker))

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
    """Write `INSTANCE_FILE` anew (`private_file`: mode 0600 from its first byte, through a
    temporary name, so a reader never sees half of it; no link is followed)."""
    document = {
        "pid": instance.pid,
        "url": instance.url,
        "mode": instance.mode,
        "launch_secret": instance.launch_secret,
    }
    with private_file(path / INSTANCE_FILE) as handle:
        handle.write(json.dumps(document).encode())


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
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid != os.getuid()
            or stat.S_IMODE(info.st_mode) & 0o077
        ):
            return None
        document = json.loads(os.read(fd, 4096).decode())
        instance = Instance(
            int(document["pid"]),
            str(document["url"]),
            document["mode"],
            document.get("launch_secret"),
        )
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
