"""The SQLite part of a backup: a consistent copy through SQLite's online backup API.

`copy_database` copies every table there is — tables added by later migrations included,
without a change here — in one backup step: the step holds one read transaction, so the
copy is the database as of one moment while the app goes on writing (WAL lets the writer
proceed). It runs on the caller's thread; the app calls it from a worker thread, and
`sqlite3_backup_step` releases the GIL while it copies.

Accounts (`users`: password hashes, `api_tokens`: token hashes) are credentials: they are
deleted from the copy, with `secure_delete` so that no freed page keeps them, unless the
caller asks for a full backup.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

# Tables that hold credentials; child before parent (api_tokens references users).
ACCOUNT_TABLES = ("api_tokens", "users")


def copy_database(source: Path, target: Path, *, include_accounts: bool) -> None:
    """Copy `source` into the new file `target` (one file, rollback-journal mode)."""
    src = sqlite3.connect(source)
    dst = sqlite3.connect(target)
    try:
        src.execute("PRAGMA busy_timeout=5000")
        src.backup(dst)  # pages=-1: one step, one read transaction, one consistent moment
        dst.execute("PRAGMA journal_mode=DELETE")  # the copy is a single self-contained file
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
                conn.execute(f"DELETE FROM {table}")  # noqa: S608 - names from our constant


def carry_accounts(target: Path, source: Path) -> int:
    """Copy the accounts of the database `source` into `target` where `target` has none of
    that name (a restore of a backup without accounts keeps the install's users); returns the
    number of users carried over."""
    conn = sqlite3.connect(f"file:{target}", uri=True)  # uri: ATTACH below takes a URI too
    try:
        conn.execute("PRAGMA foreign_keys=OFF")
        # immutable: nothing is written beside `source` (a backup folder lists every file)
        conn.execute("ATTACH DATABASE ? AS previous", (f"file:{source}?mode=ro&immutable=1",))
        with conn:
            carried = 0
            for table in reversed(ACCOUNT_TABLES):  # parent first
                if table_exists(conn, table) and table_exists(conn, table, schema="previous"):
                    columns = ", ".join(_columns(conn, table))
                    cursor = conn.execute(
                        f"INSERT OR IGNORE INTO main.{table} ({columns}) "  # noqa: S608
                        f"SELECT {columns} FROM previous.{table}")
                    if table == "users":
                        carried = cursor.rowcount
        conn.execute("DETACH DATABASE previous")
        return carried
    finally:
        conn.close()


def table_exists(conn: sqlite3.Connection, table: str, *, schema: str = "main") -> bool:
    row = conn.execute(f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?",
                       (table,)).fetchone()
    return row is not None


def _columns(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")]


def count_contents(conn: sqlite3.Connection) -> dict[str, int]:
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
    users = scalar(f"SELECT COUNT(*) FROM ({' UNION '.join(user_sources)})")
    day_sources = ["SELECT user_id, calendar_date FROM messages"]
    if table_exists(conn, "journal_days") and table_exists(conn, "journal_spaces"):
        day_sources.append("SELECT s.user_id, d.calendar_date FROM journal_days d "
                           "JOIN journal_spaces s ON s.space_id = d.space_id")
    return {
        "users": users,
        "days": scalar(f"SELECT COUNT(*) FROM ({' UNION '.join(day_sources)})"),
        "entries": scalar("SELECT COUNT(*) FROM journal_entries WHERE deleted_at IS NULL"),
        "messages": scalar("SELECT COUNT(*) FROM messages"),
        "media": scalar("SELECT COUNT(*) FROM media_assets"),
    }
