"""SQLite with one writer.

Every write goes through `execute_write_fn`, which runs on a single dedicated thread with
the one write connection: writes never interleave and never block the event loop. Reads run
on a small pool of threads, each with its own read-only connection (WAL lets them proceed
while a write is in flight).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from app.storage.migrations import apply_migrations

T = TypeVar("T")
READ_THREADS = 2


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
        """Open the write connection and apply migrations; returns the migrations that ran."""
        def _open() -> list[str]:
            self._write_conn = connect(self.path)
            return apply_migrations(self._write_conn)

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
