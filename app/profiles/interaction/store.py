"""The interaction profile's table (`interaction_profiles`, migration `m006_profile`): reads on
the reader pool, every write through the database's one writer, each one transaction.

`load` and `save` work inside a transaction someone else holds, so an import of both
profiles (`app.profiles.writing.store.ProfileStore.replace`) stays one transaction.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable

import msgspec

from app.profiles.interaction.profile import InteractionProfile, Pref, Suggestion
from app.storage.database import Database

_PREFS = msgspec.json.Decoder(dict[str, Pref])
_SUGGESTIONS = msgspec.json.Decoder(list[Suggestion])


class InteractionStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def current(self, user_id: str) -> InteractionProfile:
        return await self.db.execute_fn(lambda conn: load(conn, user_id))

    async def edit(
        self, user_id: str, fn: Callable[[InteractionProfile], None]
    ) -> InteractionProfile:
        """Change the profile in one transaction: `fn` changes the profile it gets (raising
        writes nothing)."""

        def write(conn: sqlite3.Connection) -> InteractionProfile:
            current = load(conn, user_id)
            fn(current)
            save(conn, user_id, current)
            return current

        return await self.db.execute_write_fn(write)


def load(conn: sqlite3.Connection, user_id: str) -> InteractionProfile:
    row = conn.execute(
        "SELECT * FROM interaction_profiles WHERE user_id = ?", (user_id,)
    ).fetchone()
    if row is None:
        return InteractionProfile()
    return InteractionProfile(
        governance=row["governance"],
        prefs=_PREFS.decode(row["prefs_json"]),
        suggestions=_SUGGESTIONS.decode(row["suggestions_json"]),
    )


def save(conn: sqlite3.Connection, user_id: str, current: InteractionProfile) -> None:
    conn.execute(
        "INSERT INTO interaction_profiles (user_id, governance, prefs_json, "
        "suggestions_json, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT "
        "(user_id) DO UPDATE SET governance = excluded.governance, "
        "prefs_json = excluded.prefs_json, "
        "suggestions_json = excluded.suggestions_json, "
        "updated_at = excluded.updated_at",
        (
            user_id,
            current.governance,
            # json.dumps, as every version wrote it: the stored text stays the same
            json.dumps(msgspec.to_builtins(current.prefs)),
            json.dumps(msgspec.to_builtins(current.suggestions)),
            time.time(),
        ),
    )
