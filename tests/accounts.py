"""A headless user in a data dir's database, as `novaberg user add NAME` makes one."""

from __future__ import annotations

from pathlib import Path

from app.auth.accounts import add_user_sync
from app.storage.database import connect
from app.storage.migrations import apply_migrations
from app.wiring.server import DATABASE_FILE

PASSWORD = "correct horse battery"


def add_user(data_path: Path, name: str = "anna", password: str = PASSWORD) -> str:
    """Add `name` (the database is made if need be); returns the user's API token."""
    data_path.mkdir(parents=True, exist_ok=True)
    conn = connect(data_path / DATABASE_FILE)
    try:
        apply_migrations(conn)
        return add_user_sync(conn, name, password)
    finally:
        conn.close()
