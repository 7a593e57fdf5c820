"""The migrations run in number order, and a store that ran them in the order they once
shipped in (1, 2, 3, 6, 4, 5, …) has the schema of one that ran them in number order."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from app.storage import migrations
from app.storage.database import connect
from app.storage.migrations import MIGRATIONS, apply_migrations


def schema(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    return sorted(tuple(row) for row in conn.execute(
        "SELECT type, name, COALESCE(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        " AND name != '_migrations'").fetchall())


def test_they_are_registered_in_number_order() -> None:
    assert [int(fn.__name__[1:4]) for fn in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))


def test_one_registered_out_of_its_number_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migrations, "MIGRATIONS", list(MIGRATIONS))

    def m099_later(db: sqlite3.Connection) -> None: ...

    with pytest.raises(AssertionError, match="m099_later registered as migration"):
        migrations.migration(m099_later)


def test_the_order_they_shipped_in_gives_the_same_schema(tmp_path: Path) -> None:
    fresh = connect(tmp_path / "fresh.sqlite3")
    apply_migrations(fresh)
    old = connect(tmp_path / "old.sqlite3")
    old.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    by_name = {fn.__name__: fn for fn in MIGRATIONS}
    for name in ("m001_users", "m002_messages", "m003_journal", "m006_profile",
                 "m004_privacy_identities", "m005_memories"):
        with old:
            by_name[name](old)
            old.execute("INSERT INTO _migrations VALUES (?, 0)", (name,))
    ran = apply_migrations(old)
    assert ran == [fn.__name__ for fn in MIGRATIONS[6:]]
    assert schema(old) == schema(fresh)
