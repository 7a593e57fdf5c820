"""A connection to the durable store an app of `settings` uses: the data dir's SQLite file,
or with a `database_url` that PostgreSQL database (for tests that look at rows directly)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from app.core.settings import ENV_PREFIX, Settings, defaults
from app.storage.database import connect, connect_postgres
from app.wiring.server import DATABASE_FILE


def store_connection(settings: Settings) -> Any:
    """The store's connection (sqlite3-like on both engines); the caller closes it."""
    if settings.database_url:
        return connect_postgres(settings.database_url)
    return connect(settings.data_path / DATABASE_FILE)


@contextlib.contextmanager
def store_transaction(settings: Settings) -> Iterator[Any]:
    """`store_connection` inside one transaction (committed at the end), then closed."""
    conn = store_connection(settings)
    try:
        with conn:
            yield conn
    finally:
        conn.close()


def live_connection(data_dir: Path) -> Any:
    """`store_connection` of the app on `data_dir`: its SQLite file, or under
    `--engine=postgresql` the test's database (tests/conftest.py puts its URL in the
    environment, as the apps and command lines of the test get it)."""
    url = os.environ.get(f"{ENV_PREFIX}DATABASE_URL")
    return store_connection(defaults(data_dir=str(data_dir), database_url=url))
