"""SQLite with one writer.

Every write goes through `execute_write_fn`, which runs on a single dedicated thread with
the one write connection: writes never interleave and never block the event loop. Reads run
on a small pool of threads, each with its own read-only connection (WAL lets them proceed
while a write is in flight). A long read (an export) is `stream`ed: a generator over a
read-only connection of its own, each of its items made on a reader thread in turn, so other
reads run between them.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from app.storage.datadir import DataDirError
from app.storage.migrations import apply_migrations

T = TypeVar("T")
READ_THREADS = 2


class DatabaseDamaged(DataDirError):
    """The database file is not a sound SQLite database; the message says what to do."""

    def __init__(self, path: Path, reason: str) -> None:
        data = path.parent
        super().__init__(f"database {path} is damaged ({reason}); restore a backup: "
                         f"novaberg --data-dir {data} restore <backup folder> --yes (the "
                         f"app's own backups are in {data / 'backups'})")


_HEADER = b"SQLite format 3\x00"


def check_file(path: Path) -> None:
    """A quick look at the file's header (not a scan): `DatabaseDamaged` when it is not a
    database or is shorter than the size its header records (a copy cut off)."""
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
            size = os.fstat(handle.fileno()).st_size
    except FileNotFoundError:
        return
    if not header:
        return  # empty: a new database
    if len(header) < 100 or not header.startswith(_HEADER):
        raise DatabaseDamaged(path, "not an SQLite database")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count is valid when the change counter matches "version-valid-for".
    if header[24:28] == header[92:96] and size < pages * page_size:
        raise DatabaseDamaged(path, f"cut short: {size} of {pages * page_size} bytes")


def connect(path: Path, *, readonly: bool = False) -> sqlite3.Connection:
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        # Owner-only, like the rest of the data dir: it holds password hashes and messages.
        path.touch(mode=0o600, exist_ok=True)
        os.chmod(path, 0o600)
        conn = sqlite3.connect(path, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        # Deleted content is overwritten, not just unlinked: forgetting a memory is real.
        conn.execute("PRAGMA secure_delete=ON")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.row_factory = sqlite3.Row
    return conn


class Database:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._readers = ThreadPoolExecutor(max_workers=READ_THREADS,
                                           thread_name_prefix="sqlite-reader")
        self._write_conn: sqlite3.Connection | None = None
        self._local = threading.local()
        self._read_conns: list[sqlite3.Connection] = []
        self._closed = False

    async def open(self) -> list[str]:
        """Open the write connection and apply migrations; returns the migrations that ran.
        `DatabaseDamaged` when the file is cut short or not a database."""
        def _open() -> list[str]:
            check_file(self.path)
            try:
                self._write_conn = connect(self.path)
                return apply_migrations(self._write_conn)
            except sqlite3.DatabaseError as exc:
                raise DatabaseDamaged(self.path, str(exc)) from None

        return await asyncio.get_running_loop().run_in_executor(self._writer, _open)

    async def execute_write_fn(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on the writer thread inside a transaction."""
        def _run() -> T:
            assert self._write_conn is not None, "database not open"
            with self._write_conn:
                return fn(self._write_conn)

        return await asyncio.get_running_loop().run_in_executor(self._writer, _run)

    async def execute_fn(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read `fn(conn)` on a reader thread."""
        def _run() -> T:
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = connect(self.path, readonly=True)
                self._read_conns.append(conn)
            return fn(conn)

        return await asyncio.get_running_loop().run_in_executor(self._readers, _run)

    async def read_stream(self, produce: Callable[[sqlite3.Connection], Iterator[T]]
                          ) -> AsyncIterator[T]:
        """The items of the generator `produce(conn)`, each made on a reader thread (one
        step at a time, never two at once) over a read-only connection of its own, closed
        at the end. Use it with `contextlib.aclosing`, so that the generator is closed on
        its thread when the reader stops early (a client that went away)."""
        loop = asyncio.get_running_loop()
        conn = await loop.run_in_executor(self._readers, _read_connection, self.path)
        items = produce(conn)
        try:
            while (item := await loop.run_in_executor(self._readers, next, items,
                                                      _DONE)) is not _DONE:
                yield item  # type: ignore[misc]
        finally:
            # Shielded: the generator and its connection are closed on a reader thread
            # even when the task that read them is being cancelled.
            await asyncio.shield(loop.run_in_executor(self._readers, _close, items, conn))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()

        def _close_writer() -> None:
            if self._write_conn is not None:
                self._write_conn.close()

        await loop.run_in_executor(self._writer, _close_writer)
        self._readers.shutdown(wait=True)
        for conn in self._read_conns:
            conn.close()
        self._writer.shutdown(wait=True)


_DONE = object()


def _read_connection(path: Path) -> sqlite3.Connection:
    return connect(path, readonly=True)


def _close(items: Iterator[object], conn: sqlite3.Connection) -> None:
    try:
        close = getattr(items, "close", None)
        if close is not None:
            close()
    finally:
        conn.close()
