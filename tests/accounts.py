"""A headless user in a data dir's database, as `novaberg user add NAME` makes one — or, for
settings with a `database_url`, in that PostgreSQL database."""

from __future__ import annotations

from pathlib import Path

from app.auth.accounts import add_user_sync
from app.core.settings import Settings
from app.storage.database import connect, connect_postgres
from app.storage.migrations import apply_migrations
from app.wiring.server import DATABASE_FILE

PASSWORD = "correct horse battery"


def add_user(where: Path | Settings, name: str = "anna", password: str = PASSWORD) -> str:
    """Add `name` to a data dir's database (or the settings' store; made if need be);
    returns the user's API token."""
    if isinstance(where, Settings) and where.database_url:
        conn = connect_postgres(where.database_url)
    else:
        data_path = where.data_path if isinstance(where, Settings) else where
        data_path.mkdir(parents=True, exist_ok=True)
        conn = connect(data_path / DATABASE_FILE)
    try:
        apply_migrations(conn)
        return add_user_sync(conn, name, password)
    finally:
        conn.close()
