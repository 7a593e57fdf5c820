"""`stream_rows`: a long read (an export's) comes as it is read on both engines; on
PostgreSQL from a server-side cursor, `STREAM_ROWS` at a time — a client cursor would hold
the whole result (in libpq's memory, out of tracemalloc's sight) before its first row. The
cursor is seen where the server lists it (`pg_cursors`), other queries run between two rows,
and it is gone once the stream ends."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from app.backup.chat_export import CHAT
from app.backup.exports import make_query, stream
from app.storage.database import STREAM_ROWS, connect, connect_postgres, stream_rows
from app.storage.migrations import apply_migrations

ROWS = 3 * STREAM_ROWS + 1


@pytest.fixture
def conn(database_url: str | None, tmp_path: Any) -> Any:
    conn = connect_postgres(database_url) if database_url else connect(tmp_path / "s.sqlite3")
    yield conn
    conn.close()


def open_cursors(conn: Any) -> int:
    return conn.execute("SELECT COUNT(*) FROM pg_cursors").fetchone()[0]


def test_a_stream_yields_every_row_in_order_with_queries_between(conn):
    rows = stream_rows(conn, "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
                             "WHERE n < ?) SELECT n, n * 2 AS twice FROM s ORDER BY n", (ROWS,))
    got = []
    for row in rows:
        got.append((row[0], row["twice"]))
        assert conn.execute("SELECT ?", (row[0],)).fetchone()[0] == row[0]
    assert got == [(n, 2 * n) for n in range(1, ROWS + 1)]


@pytest.mark.postgres_only("a server-side cursor is PostgreSQL's")
@pytest.mark.parametrize("in_transaction", [True, False])
def test_postgres_reads_a_stream_in_pages_of_a_server_side_cursor(conn, in_transaction):
    if in_transaction:
        conn.execute("BEGIN")
    rows = stream_rows(conn, "SELECT n FROM generate_series(1, ?) AS n", (ROWS,))
    first = next(rows)
    assert first[0] == 1 and open_cursors(conn) == 1  # the rest is still on the server
    assert [row[0] for row in rows] == list(range(2, ROWS + 1))
    assert open_cursors(conn) == 0  # closed at its end
    half = stream_rows(conn, "SELECT n FROM generate_series(1, ?) AS n", (ROWS,))
    next(half)
    half.close()  # a conn that stopped early
    assert open_cursors(conn) == 0
    if in_transaction:
        conn.rollback()


@pytest.mark.postgres_only("a server-side cursor is PostgreSQL's")
def test_a_chat_export_on_postgres_reads_the_log_through_a_cursor(conn):
    apply_migrations(conn)
    with conn:
        conn.executemany(
            "INSERT INTO messages (entry_key, user_id, character_id, turn_id, message_ids, "
            "role, origin, text, created, calendar_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((f"k{n}", "cursor-user", "nova", f"t{n}", "[]", "user", "", f"Nachricht {n} " * 50,
              1772323200.0 + n, "2026-03-01") for n in range(ROWS)))
    chunks = stream(CHAT, conn, make_query("cursor-user"), "json")
    with contextlib.closing(chunks):
        first = next(chunks)
        assert b'"entry_key": "k0"' in first and b'"k%d"' % (ROWS - 1) not in first
        assert open_cursors(conn) == 1  # the rows after this chunk are not here yet
        rest = b"".join(chunks)
    assert b'"entry_key": "k%d"' % (ROWS - 1) in rest
    with conn:
        conn.execute("DELETE FROM messages WHERE user_id = ?", ("cursor-user",))
