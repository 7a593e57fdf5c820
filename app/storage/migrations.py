"""Append-only schema migrations, recorded in the `_migrations` table.

Add a new function at the end with the next number; never edit or reorder one that has
shipped. `apply_migrations` runs the missing ones in order, each in its own transaction.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_users(db: sqlite3.Connection) -> None:
    db.execute(
        """
        CREATE TABLE users (
            user_id TEXT PRIMARY KEY,
            password_hash TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE api_tokens (
            token_hash TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(user_id),
            created_at REAL NOT NULL
        )
        """
    )


def applied(db: sqlite3.Connection) -> list[str]:
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    return [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY rowid")]


def apply_migrations(db: sqlite3.Connection) -> list[str]:
    """Run every migration not yet recorded; return the names that ran."""
    done = set(applied(db))
    ran = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        with db:
            fn(db)
            db.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                       (fn.__name__, time.time()))
        ran.append(fn.__name__)
    return ran


@migration
def m002_messages(db: sqlite3.Connection) -> None:
    """The durable message log: every stored turn, written by the pipelines' dispatcher.

    One row per turn text (a user block, or one answer of the character; a continue run
    under the same `turn_id` adds a row). `entry_key` makes a rerun of the same write (crash
    recovery) a no-op. `created` is when it was said; `calendar_date` the local day it
    belongs to (seed 004: the calendar day is not derived from `created` later).
    """
    db.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_key TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            message_ids TEXT NOT NULL DEFAULT '[]',
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            origin TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            created REAL NOT NULL,
            calendar_date TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX messages_by_day ON messages (user_id, calendar_date, created)")
    db.execute("CREATE INDEX messages_by_turn ON messages (turn_id)")


@migration
def m004_privacy_identities(db: sqlite3.Connection) -> None:
    """The privacy gateway's identity registry (SPEC §7a): the people each user names, in
    the order they were given, and which deprecated sources were imported once."""
    db.execute(
        """
        CREATE TABLE privacy_identities (
            user_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            aliases TEXT NOT NULL DEFAULT '[]',
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, position)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE privacy_legacy_imports (
            source TEXT PRIMARY KEY,
            imported_at REAL NOT NULL,
            names INTEGER NOT NULL
        )
        """
    )
