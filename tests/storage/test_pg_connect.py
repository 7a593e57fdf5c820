"""`connect_postgres`: a reader's connection is read-only and reads one moment of the store
(REPEATABLE READ); the writer's has the server's defaults. Only under `--engine=postgresql`."""

from __future__ import annotations

import pytest

from app.storage.database import connect_postgres

pytestmark = pytest.mark.postgres_only


def session_defaults(url: str, *, readonly: bool) -> tuple[str, str]:
    conn = connect_postgres(url, readonly=readonly)
    try:
        only = conn.execute("SHOW default_transaction_read_only").fetchone()[0]
        isolation = conn.execute("SHOW default_transaction_isolation").fetchone()[0]
        return only, isolation
    finally:
        conn.close()


def test_a_readers_connection_is_read_only_and_repeatable_read(postgres_url: str) -> None:
    assert session_defaults(postgres_url, readonly=True) == ("on", "repeatable read")


def test_the_writers_connection_has_the_servers_defaults(postgres_url: str) -> None:
    assert session_defaults(postgres_url, readonly=False) == ("off", "read committed")
