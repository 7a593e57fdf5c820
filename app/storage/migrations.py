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
def m005_memories(db: sqlite3.Connection) -> None:
    """Long-term memory (SPEC §3a): what the character knows about its user across days.

    One row per memory of a pair. `memory_id` is the public id; the integer `id` is the FTS
    row id. A corrected memory stays, with `superseded_by` naming its successor; "live"
    memories have none. `source_message_ids` (JSON) names the user messages it came from.
    `memory_triggers` records every promotion trigger consolidated, in the same transaction
    as its memories, so a trigger run again after a crash changes nothing.

    The FTS5 index uses the **trigram** tokenizer (case-insensitive): a word matches inside
    longer words, so "Leipzig" finds "Leipziger" and "Schwester" finds "Zwillingsschwester" —
    what German compounds and inflection need, in English too, without a stemmer per
    language. Query terms shorter than three letters match nothing (the query builder drops
    them). The index is external-content (it stores no second copy of the text); triggers
    keep it in step with the table.
    """
    db.execute(
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN
                ('fact', 'person', 'preference', 'event', 'plan', 'feeling')),
            importance REAL NOT NULL DEFAULT 0.5,
            created_at REAL NOT NULL,
            refreshed_at REAL NOT NULL,
            last_used_at REAL,
            reflected_at REAL,
            source_message_ids TEXT NOT NULL DEFAULT '[]',
            superseded_by TEXT
        )
        """
    )
    db.execute("CREATE INDEX memories_by_pair ON memories (user_id, character_id, created_at)")
    db.execute(
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, content='memories', content_rowid='id', tokenize='trigram')
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
        END
        """
    )
    db.execute(
        """
        CREATE TABLE memory_triggers (
            trigger_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            consolidated_at REAL NOT NULL
        )
        """
    )
