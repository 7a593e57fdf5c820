"""Files written so that a crash or a planted link cannot spoil them.

- `private_file(path)`: a new file's content goes to a temporary name beside it (created
  exclusively, mode 0600), is fsynced, and is renamed over `path` at the end, the folder
  fsynced after: a `kill -9` leaves the old file or the new one, never half of one. A `path`
  that is a link or not a regular file is refused (`NotRegular`): the write never goes
  through a link to somewhere else.
- `open_regular(path)`: reads a file only if it is a regular file itself (no link followed,
  no FIFO or device that would block or feed endless data).
- `fsync_dir(path)`: makes a rename or an unlink in `path` durable.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

PRIVATE_MODE = 0o600


class NotRegular(OSError):
    """A path that should be a plain file is a link, a folder, a FIFO or a device."""


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def kind_of(mode: int) -> str:
    """What a non-regular `st_mode` is, in words."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def check_regular(path: Path, *, missing_ok: bool = False) -> None:
    """`NotRegular` unless `path` is a regular file (or, with `missing_ok`, absent)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        if missing_ok:
            return
        raise
    if not stat.S_ISREG(mode):
        raise NotRegular(f"{path} is {kind_of(mode)}")


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading, refused (`NotRegular`) unless it is a regular file; the
    check is on the opened file itself, so a link swapped in meanwhile is refused too."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last part of the path is a link
            raise NotRegular(f"{path} is a symbolic link") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(f"{path} is {kind_of(mode)}")
    return os.fdopen(fd, "rb")


@contextlib.contextmanager
def private_file(path: Path) -> Iterator[BinaryIO]:
    """Write `path` anew (mode 0600) through a temporary name beside it; see the module."""
    check_regular(path, missing_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        check_regular(path, missing_ok=True)  # not swapped for a link meanwhile
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
