"""The database part of a backup: a consistent copy through SQLite's online backup API —
or, from PostgreSQL, the same SQLite file written row by row (`dump_store`), so a backup
folder has one format whatever the engine, and a restore puts it into either (`load_store`
fills PostgreSQL from it): a user moves from the desktop to a server and back by backup and
restore.

`copy_database` copies every table there is — tables added by later migrations included,
without a change here — in one backup step: the step holds one read transaction, so the
copy is the database as of one moment while the app goes on writing (WAL lets the writer
proceed). It runs on the caller's thread; the app calls it from a worker thread, and
`sqlite3_backup_step` releases the GIL while it copies.

Accounts (`users`: password hashes, `api_tokens`: token hashes) are credentials: they are
deleted from the copy, with `secure_delete` so that no freed page keeps them, unless the
caller asks for a full backup. A restore checks the other way round (`check_backup_database`):
a backup that says it holds no accounts must have none, one that holds accounts holds only
those an install writes (never a password or token of `local`, the admin), and when the
install's accounts are carried into what it restores, they replace whatever is there
(`carry_accounts`).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.core.user_names import valid_user_name
from app.storage import dialect
from app.storage.connection import Connection
from app.storage.database import STREAM_ROWS, connect_postgres, stream_rows
from app.storage.install import INSTALL_TABLE
from app.storage.migrations import MIGRATIONS_TABLE, apply_migrations

# Tables that hold credentials; child before parent (api_tokens references users).
ACCOUNT_TABLES = ("api_tokens", "users")
# The store's own bookkeeping, not its contents: never copied between stores (a restore keeps
# the target's migrations and install id, `app.storage.install`).
STORE_TABLES = (MIGRATIONS_TABLE, INSTALL_TABLE)


def copy_database(source: Path, target: Path, *, include_accounts: bool) -> None:
    """Copy `source` into the new file `target` (one file, rollback-journal mode)."""
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.execute("PRAGMA busy_timeout=5000")
        src.backup(dst)  # pages=-1: one step, one read transaction, one consistent moment
        dst.execute("PRAGMA journal_mode=DELETE")  # the copy is a single self-contained file
        if table_exists(dst, INSTALL_TABLE):  # the install's id stays with the install
            with dst:
                dst.execute(f"DELETE FROM {INSTALL_TABLE}")
        if not include_accounts:
            drop_accounts(dst)
    finally:
        src.close()
        dst.close()


def drop_accounts(conn: sqlite3.Connection) -> None:
    """Delete every account row. `secure_delete` overwrites the deleted content (cells and
    freed pages) with zeros, so no hash survives in the file — without a VACUUM, which would
    rewrite the whole database."""
    conn.execute("PRAGMA foreign_keys=OFF")  # rows of other tables may name a user
    conn.execute("PRAGMA secure_delete=ON")
    with conn:
        for table in ACCOUNT_TABLES:
            if table_exists(conn, table):
                conn.execute(f"DELETE FROM {table}")


def carry_accounts(target: Path, source: Path) -> int:
    """Give `target` the accounts of the database `source`, replacing any it has: the
    install's rows win (a restore of a backup without accounts keeps the install's users and
    tokens, and nothing of the backup's); returns the number of users carried over."""
    conn = sqlite3.connect(f"file:{target}", uri=True)  # uri: ATTACH below takes a URI too
    try:
        conn.execute("PRAGMA foreign_keys=OFF")
        # immutable: nothing is written beside `source` (a backup folder lists every file)
        conn.execute("ATTACH DATABASE ? AS previous", (f"file:{source}?mode=ro&immutable=1",))
        with conn:
            carried = 0
            for table in ACCOUNT_TABLES:  # child first
                if table_exists(conn, table):
                    conn.execute(f"DELETE FROM main.{table}")
            for table in reversed(ACCOUNT_TABLES):  # parent first
                if table_exists(conn, table) and table_exists(conn, table, schema="previous"):
                    columns = ", ".join(_columns(conn, table))
                    cursor = conn.execute(
                        f"INSERT INTO main.{table} ({columns}) "
                        f"SELECT {columns} FROM previous.{table}"
                    )
                    if table == "users":
                        carried = cursor.rowcount
        conn.execute("DETACH DATABASE previous")
        return carried
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class Accounts:
    """The accounts a database holds: user names, and how many API tokens."""

    users: list[str]
    tokens: int

    def describe(self) -> str:
        """ "anna, bob (2 users, 3 API tokens)"; a name that is not plain text is quoted."""
        names = ", ".join(n if n.isascii() and n.isprintable() else ascii(n) for n in self.users)
        return (
            f"{names or 'none'} ({len(self.users)} user{'s' * (len(self.users) != 1)}, "
            f"{self.tokens} API token{'s' * (self.tokens != 1)})"
        )


def read_accounts(conn: sqlite3.Connection) -> Accounts:
    users = (
        [row[0] for row in conn.execute("SELECT user_id FROM users ORDER BY user_id")]
        if table_exists(conn, "users")
        else []
    )
    tokens = (
        conn.execute("SELECT COUNT(*) FROM api_tokens").fetchone()[0]
        if table_exists(conn, "api_tokens")
        else 0
    )
    return Accounts(users, tokens)


def foreign_account_names(conn: sqlite3.Connection) -> list[str]:
    """The names with a password or a token that no install writes: `local` (the admin,
    whose credential is never stored) or a name `novaberg user add` refuses."""
    names: set[str] = set()
    for table in ACCOUNT_TABLES:
        if table_exists(conn, table):
            names.update(row[0] for row in conn.execute(f"SELECT DISTINCT user_id FROM {table}"))
    return sorted(name for name in names if not valid_user_name(str(name)))


def check_backup_database(path: Path, *, accounts_included: bool) -> tuple[list[str], Accounts]:
    """The problems of a backup's database file — not a sound SQLite database, or accounts
    the manifest does not own up to (a backup "without accounts" that has some would plant
    password logins and tokens), or accounts no install writes (a login of the admin) —
    and the accounts it holds."""
    name = path.name
    conn = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
        if verdict != "ok":
            return [f"{name} is a damaged database ({verdict})"], Accounts([], 0)
        accounts = read_accounts(conn)
        foreign = foreign_account_names(conn)
    except sqlite3.DatabaseError as exc:
        return [f"{name} is not a readable SQLite database ({exc})"], Accounts([], 0)
    finally:
        conn.close()
    if not accounts_included and (accounts.users or accounts.tokens):
        return [
            f"the manifest says the backup holds no accounts, but {name} has "
            f"{accounts.describe()}: a changed or crafted backup, which would plant "
            "logins"
        ], accounts
    if foreign:
        named = ", ".join(ascii(name) for name in foreign)
        return [
            f"{name} has accounts no install writes ({named}; `local` is the admin, "
            "whose password or token is never stored): a changed or crafted backup, which "
            "would plant an admin login"
        ], accounts
    return [], accounts


def table_exists(conn: Connection, table: str, *, schema: str = "main") -> bool:
    if dialect.is_postgres(conn):
        return table in dialect.tables(conn)
    row = conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return row is not None


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]


def count_contents(conn: Connection) -> dict[str, int]:
    """What a backup holds, for the manifest and the restore question: users with data or an
    account, their calendar days with messages or a journal day, journal entries not in the
    trash, messages. A table that does not exist (yet) counts 0."""

    def scalar(sql: str) -> int:
        try:
            return int(conn.execute(sql).fetchone()[0])
        except sqlite3.OperationalError:  # no such table (yet)
            return 0

    user_sources = ["SELECT user_id FROM messages"]
    if table_exists(conn, "users"):
        user_sources.append("SELECT user_id FROM users")
    users = scalar(f"SELECT COUNT(*) FROM ({' UNION '.join(user_sources)}) AS found")
    day_sources = ["SELECT user_id, calendar_date FROM messages"]
    if table_exists(conn, "journal_days") and table_exists(conn, "journal_spaces"):
        day_sources.append(
            "SELECT s.user_id, d.calendar_date FROM journal_days d "
            "JOIN journal_spaces s ON s.space_id = d.space_id"
        )
    return {
        "users": users,
        "days": scalar(f"SELECT COUNT(*) FROM ({' UNION '.join(day_sources)}) AS found"),
        "entries": scalar("SELECT COUNT(*) FROM journal_entries WHERE deleted_at IS NULL"),
        "messages": scalar("SELECT COUNT(*) FROM messages"),
        "media": scalar("SELECT COUNT(*) FROM media_assets"),
    }


# --- PostgreSQL: the same backup file, row by row -----------------------------------------------


def dump_store(database_url: str, target: Path, *, include_accounts: bool) -> None:
    """Write PostgreSQL's store as a backup's SQLite file `target` (new): the schema from the
    same migrations, every table's rows as of one moment (one REPEATABLE READ transaction),
    without accounts unless asked for."""
    source = connect_postgres(database_url, readonly=True)
    copy = sqlite3.connect(target)
    try:
        apply_migrations(copy)
        copy.execute("PRAGMA journal_mode=DELETE")
        import psycopg

        source.raw.autocommit = False
        source.raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        skip = () if include_accounts else ACCOUNT_TABLES
        with copy:
            copy_rows(source, copy, skip=skip)
        source.raw.rollback()
    finally:
        source.close()
        copy.close()


def load_store(
    source: Path, database_url: str, before_commit: Callable[[], None] = lambda: None
) -> None:
    """Replace every row of PostgreSQL's store with those of a backup's SQLite file `source`
    (migrated to this version first, on the file: the caller's own copy, never the backup
    folder's), in one transaction — a process killed before its commit (`before_commit` runs
    just before it) changed nothing; the accounts there stay when the file has none."""
    backup = sqlite3.connect(source)
    target = connect_postgres(database_url)
    try:
        apply_migrations(backup)
        apply_migrations(target)
        keep_accounts = not backup.execute("SELECT 1 FROM users LIMIT 1").fetchone()
        skip = ACCOUNT_TABLES if keep_accounts else ()
        with target:
            for table in reversed(_parents_first(target)):
                if table not in skip and table not in STORE_TABLES:
                    target.execute(f'DELETE FROM "{table}"')
            copy_rows(backup, target, skip=skip)
            _renumber_after_copy(target)
            before_commit()
    finally:
        backup.close()
        target.close()


def copy_rows(source: Any, target: Any, *, skip: tuple[str, ...] = ()) -> None:
    """Every row of every table of `source` into the same table of `target` (both at the
    same migration; parents before children), the columns both have."""
    wanted = set(dialect.tables(target))
    for table in _parents_first(source):
        if table in skip or table in STORE_TABLES or table not in wanted:
            continue
        columns = [
            c
            for c in dialect.columns_of(source, table)
            if c in set(dialect.columns_of(target, table)) and c != "rowid"
        ]
        names = ", ".join(f'"{c}"' for c in columns)
        # The journal's messages keep their order (the history orders by it), no matter
        # whether the order is SQLite's rowid or PostgreSQL's column of that name.
        order = " ORDER BY rowid" if table == "journal_messages" else ""
        rows = stream_rows(source, f'SELECT {names} FROM "{table}"{order}')
        insert = f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" * len(columns))})'
        # In pages, so a copy holds a page of a table, not the table (a day of 200 000
        # messages is a few hundred MB as Python rows).
        while page := list(itertools.islice(rows, STREAM_ROWS)):
            target.executemany(insert, page)


def _parents_first(conn: Any) -> list[str]:
    """The schema's tables, each after those its foreign keys name."""
    parents: dict[str, set[str]] = {table: set() for table in dialect.tables(conn)}
    for table, _, parent, _ in dialect.foreign_keys(conn):
        if parent != table and table in parents:
            parents[table].add(parent)
    ordered: list[str] = []
    while parents:
        ready = sorted(t for t, p in parents.items() if not p - set(ordered))
        ordered += ready
        for table in ready:
            del parents[table]
    return ordered


def _renumber_after_copy(conn: Any) -> None:
    """PostgreSQL's identity columns go on after the rows copied in with their own ids."""
    for table, column in (("messages", "id"), ("memories", "id"), ("memory_pairs", "pair_no")):
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
            f"greatest((SELECT max({column}) FROM {table}), 1))"
        )
