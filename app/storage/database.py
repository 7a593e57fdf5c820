"""The durable store with one writer per process: the data dir's SQLite, or PostgreSQL.

Every write goes through `execute_write_fn`, which runs on a single dedicated thread with
the one write connection, inside a transaction: a process's writes never interleave and never
block the event loop. Reads run on a small pool of threads, each with its own connection
(SQLite: read-only, WAL lets them proceed while a write is in flight; PostgreSQL: autocommit).
Across processes (PostgreSQL only: a data dir's SQLite belongs to one process, under its lock)
the server's transactions keep writes apart. A long read (an export) is `read_stream`ed: a
generator over a read-only connection of its own, each of its items made on a reader thread in
turn, so other reads run between them.

Both engines hand `fn` a connection that speaks like `sqlite3.Connection`: `execute(sql,
params)` with `?` placeholders, `executemany`, a cursor with `fetchone`/`fetchall`/`rowcount`,
rows readable by index and by column name, `with conn:` for a (nested) transaction. SQL is
written once for both; where the engines differ, `app.storage.dialect` holds the two texts.

Why psycopg 3 directly (not SQLAlchemy): every module already speaks sqlite3's DB-API on a
connection the store hands in, on the store's own threads; psycopg's sync connection is the
same DB-API, so the seam is this file and the dialect's few differing texts — no second query
layer, no async engine beside the writer thread that keeps the one-writer rule.

One module: the one `Database` contract and its two engines (SQLite, PostgreSQL), whose
differences are read side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import os
import re
import sqlite3
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit, urlunsplit

from app.storage.connection import Connection
from app.storage.datadir import DataDirError
from app.storage.migrations import apply_migrations

T = TypeVar("T")
READ_THREADS = 2
STREAM_ROWS = 500  # the rows a streamed query (`stream_rows`) holds at once on PostgreSQL
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


class DatabaseDamaged(DataDirError):
    """The database file is not a sound SQLite database; the message says what to do."""

    def __init__(self, path: Path, reason: str) -> None:
        data = path.parent
        super().__init__(
            f"database {path} is damaged ({reason}); restore a backup: "
            f"novaberg --data-dir {data} restore <backup folder> --yes (the "
            f"app's own backups are in {data / 'backups'})"
        )


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
    """The data dir's SQLite file (`path`)."""

    engine = "sqlite"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.url: str | None = None
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="db-writer")
        self._readers = ThreadPoolExecutor(max_workers=READ_THREADS, thread_name_prefix="db-reader")
        self._write_conn: Any = None
        self._local = threading.local()
        self._read_conns: list[Any] = []
        self._closed = False

    def _connect(self, *, readonly: bool) -> Any:
        return connect(self.path, readonly=readonly)

    def _open_writer(self) -> list[str]:
        """The write connection, migrated; `DatabaseDamaged` when the file is cut short or
        not a database."""
        check_file(self.path)
        try:
            self._write_conn = self._connect(readonly=False)
            return apply_migrations(self._write_conn)
        except sqlite3.DatabaseError as exc:
            raise DatabaseDamaged(self.path, str(exc)) from None

    def _transaction(self, conn: Any) -> Any:
        return conn  # sqlite3's connection as a context manager: commit, or roll back

    def _usable(self, conn: Any, *, readonly: bool) -> Any:
        """`conn`, or a new one where it has been lost (a file's connection is not)."""
        return conn

    async def open(self) -> list[str]:
        """Open the write connection and apply migrations; returns the migrations that ran.
        `DatabaseDamaged` when the file is cut short or not a database."""

        def _open() -> list[str]:
            return self._open_writer()

        return await asyncio.get_running_loop().run_in_executor(self._writer, _open)

    async def execute_write_fn(self, fn: Callable[[Any], T]) -> T:
        """Run `fn(conn)` on the writer thread inside a transaction."""

        def _run() -> T:
            assert self._write_conn is not None, "database not open"
            self._write_conn = self._usable(self._write_conn, readonly=False)
            with self._transaction(self._write_conn):
                return fn(self._write_conn)

        return await asyncio.get_running_loop().run_in_executor(self._writer, _run)

    async def execute_fn(self, fn: Callable[[Any], T]) -> T:
        """Run a read `fn(conn)` on a reader thread."""

        def _run() -> T:
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = self._connect(readonly=True)
                self._read_conns.append(conn)
            elif (fresh := self._usable(conn, readonly=True)) is not conn:
                self._read_conns[self._read_conns.index(conn)] = fresh
                conn = self._local.conn = fresh
            return fn(conn)

        return await asyncio.get_running_loop().run_in_executor(self._readers, _run)

    async def read_stream(
        self, produce: Callable[[Connection], Iterator[T]]
    ) -> AsyncGenerator[T, None]:
        """The items of the generator `produce(conn)`, each made on a reader thread (one
        step at a time, never two at once) over a read-only connection of its own, closed
        at the end — also when the generator raises (the exception reaches the reader) or
        the reading task is cancelled. Use it with `contextlib.aclosing`, so that the
        generator is closed on its thread when the reader stops early (a client that went
        away)."""
        loop = asyncio.get_running_loop()
        conn = await loop.run_in_executor(
            self._readers, functools.partial(self._connect, readonly=True)
        )
        items: Iterator[T] | None = None
        step: Future[Any] | None = None
        try:
            items = produce(conn)
            while True:
                step = self._readers.submit(next, items, _DONE)
                item = await asyncio.wrap_future(step)
                if item is _DONE:
                    return
                yield item
        finally:
            # Shielded: the generator and its connection are closed on a reader thread
            # even when the task that read them is being cancelled.
            await asyncio.shield(self._end_stream(step, items, conn))

    async def _end_stream(
        self, step: Future[Any] | None, items: Iterator[object] | None, conn: Any
    ) -> None:
        """Close a stream's generator and connection once its last step has ended: a
        cancelled reader leaves its step running on the reader thread, and a generator
        cannot be closed while it runs."""
        if step is not None and not step.done():
            last = asyncio.wrap_future(step)
            await asyncio.wait([last])
            if not last.cancelled():
                last.exception()  # its outcome was the reader's to see, not ours
        await asyncio.get_running_loop().run_in_executor(self._readers, _close, items, conn)

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


def _close(items: Iterator[object] | None, conn: Any) -> None:
    try:
        close = getattr(items, "close", None)
        if close is not None:
            close()
    finally:
        conn.close()


class PostgresDatabase(Database):
    """A PostgreSQL database (`url`) that several processes share; the same contract."""

    engine = "postgresql"

    def __init__(self, url: str) -> None:
        super().__init__(Path(os.devnull))
        self.url = url

    def _connect(self, *, readonly: bool) -> PgConnection:
        return connect_postgres(self.url or "", readonly=readonly)

    def _transaction(self, conn: Any) -> Any:
        return conn

    def _open_writer(self) -> list[str]:
        self._write_conn = self._connect(readonly=False)
        return apply_migrations(self._write_conn)

    def _usable(self, conn: Any, *, readonly: bool) -> Any:
        # A server restart or a dropped connection costs the call it happened in, not the
        # process: the next call connects again.
        if conn.raw.closed or conn.raw.broken:
            conn.close()
            return self._connect(readonly=readonly)
        return conn


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(POSTGRES_SCHEMES)


def redact_url(url: str) -> str:
    """A store's URL (PostgreSQL's, Redis's) with any password replaced, for messages and
    logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def open_store(data_path: Path, database_url: str | None, file_name: str) -> Database:
    """The store a process uses: PostgreSQL at `database_url`, else the data dir's SQLite."""
    if database_url:
        return PostgresDatabase(database_url)
    return Database(data_path / file_name)


# --- PostgreSQL: a psycopg connection that speaks like sqlite3's --------------------------------


class Row(tuple):  # noqa: SLOT001 -- per-query subclasses carry the names
    """A result row: by index like a tuple, by column name like `sqlite3.Row`."""

    _index: ClassVar[dict[str, int]] = {}  # each per-query subclass sets its own

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


@functools.lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"_index": {name: i for i, name in enumerate(names)}})


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    if cursor.description is None:
        return tuple
    cls = _row_class(tuple(column.name for column in cursor.description))
    return cls


_QUOTED_OR_MARK = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\?|%")


@functools.lru_cache(maxsize=2048)
def pg_sql(sql: str) -> str:
    """`sql` with sqlite3's `?` placeholders as psycopg's `%s` (and a literal `%` doubled);
    quoted text is left as it is."""

    def swap(match: re.Match[str]) -> str:
        text = match.group(0)
        return "%s" if text == "?" else "%%" if text == "%" else text

    return _QUOTED_OR_MARK.sub(swap, sql)


@contextlib.contextmanager
def _as_sqlite_errors() -> Iterator[None]:
    """psycopg's errors as the sqlite3 classes the rooms catch (a unique key taken: an
    `IntegrityError`; no such table: an `OperationalError`), the original chained."""
    import psycopg

    try:
        yield
    except psycopg.errors.IntegrityError as exc:
        raise sqlite3.IntegrityError(str(exc)) from exc
    except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn) as exc:
        raise sqlite3.OperationalError(str(exc)) from exc


class PgConnection:
    """The sqlite3-like face of one psycopg connection (autocommit; `with conn:` is a
    transaction, a savepoint inside another)."""

    engine = "postgresql"

    def __init__(self, raw: Any) -> None:
        self.raw = raw
        self._transactions: list[Any] = []

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        cursor = self.raw.cursor()
        with _as_sqlite_errors():
            if params:
                cursor.execute(pg_sql(sql), tuple(params))
            else:
                cursor.execute(sql)
        return cursor

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> Iterator[Any]:
        """The rows of a query as they are read, `STREAM_ROWS` at a time, from a server-side
        cursor: a client cursor (`execute`) receives the whole result before its first row,
        so an export of 200 000 messages would be held whole in libpq's memory. Inside a
        transaction (an export's `BEGIN`) the cursor lives as long as it; outside one it is
        declared WITH HOLD. Other queries may run on the connection between two rows."""
        import psycopg

        idle = self.raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        cursor = self.raw.cursor(name=f"rows_{next(_cursor_numbers)}", withhold=idle)
        cursor.itersize = STREAM_ROWS
        try:
            with _as_sqlite_errors():
                cursor.execute(pg_sql(sql), tuple(params) if params else None)
            yield from cursor
        finally:
            # Nothing to do where the transaction (and the cursor with it) has ended or the
            # connection is closed; otherwise CLOSE.
            cursor.close()

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        cursor = self.raw.cursor()
        rows = [tuple(row) for row in rows]
        if rows:
            with _as_sqlite_errors():
                cursor.executemany(pg_sql(sql), rows)
        return cursor

    def __enter__(self) -> PgConnection:
        transaction = self.raw.transaction()
        transaction.__enter__()
        self._transactions.append(transaction)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._transactions.pop().__exit__(*exc)

    def rollback(self) -> None:
        """End the transaction an explicit `BEGIN` opened, without its writes (sqlite3's
        `rollback`; nothing when none is open)."""
        self.raw.rollback()

    def close(self) -> None:
        self.raw.close()


_cursor_numbers = itertools.count(1)


def stream_rows(conn: Any, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
    """The rows of a long read (an export's) as they are read, on either engine: SQLite's
    cursor steps through the result row by row already; PostgreSQL's comes in pages of a
    server-side cursor (`PgConnection.rows`)."""
    if isinstance(conn, PgConnection):
        return conn.rows(sql, params)
    return iter(conn.execute(sql, params))


def connect_postgres(url: str, *, readonly: bool = False) -> PgConnection:
    """A connection to PostgreSQL at `url`; `readonly`: the server refuses its writes, and
    its transactions are REPEATABLE READ."""
    import psycopg  # only a server with `database_url` needs it
    from psycopg.adapt import Dumper, Loader

    class BoolAsInt(Dumper):
        """A Python bool is stored as 0/1, as in SQLite (the schema's flags are integers)."""

        oid = psycopg.adapters.types["int8"].oid

        def dump(self, obj: bool) -> bytes:
            return b"1" if obj else b"0"

    class NumericAsNumber(Loader):
        """`sum()` of integers comes back as an int and an average as a float, as in SQLite
        (PostgreSQL answers `numeric`)."""

        def load(self, data: Any) -> int | float:
            value = Decimal(bytes(data).decode())
            return int(value) if value == value.to_integral_value() else float(value)

    # A reader's explicit transaction (an export's `BEGIN`) reads one moment of the store, as
    # SQLite's read transaction does; PostgreSQL's default, READ COMMITTED, would not.
    # psycopg leaves a None parameter out of the connection string.
    options = (
        "-c default_transaction_read_only=on -c default_transaction_isolation=repeatable\\ read"
        if readonly
        else None
    )
    raw = psycopg.connect(url, autocommit=True, row_factory=_row_factory, options=options)
    raw.adapters.register_dumper(bool, BoolAsInt)
    raw.adapters.register_loader("numeric", NumericAsNumber)
    return PgConnection(raw)
