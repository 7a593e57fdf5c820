"""A database as an older install left it: every migration before a named one applied."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def database_before(path: Path, migration: str) -> sqlite3.Connection:
    """A new database at `path` with the migrations before `migration` applied and recorded,
    on the app's own connection settings; the caller writes old rows, then migrates."""
    from app.storage.database import connect
    from app.storage.migrations import MIGRATIONS

    conn = connect(path)
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    names = [fn.__name__ for fn in MIGRATIONS]
    for fn in MIGRATIONS[:names.index(migration)]:
        with conn:
            fn(conn)
            conn.execute("INSERT INTO _migrations VALUES (?, 0)", (fn.__name__,))
    return conn
