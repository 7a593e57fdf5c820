"""The durable message log in SQLite (table `messages`, migration `m002_messages`).

The dispatcher appends one row per stored turn through the database's single writer; the
journal reads a user's day from it. Rows are never updated. `entry_key` makes writing the
same turn twice (a rerun after a crash) a no-op.

A user turn's action mark (an agent carried out what the turn asked, or failed to) comes
later in the turn than its row, so it is kept beside the log in `message_actions` (migration
`m009_journal_marks`): the journal lists the lines the character carried out apart from the
day's story.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from app.storage.database import Database


@dataclass(frozen=True, slots=True)
class LoggedMessage:
    entry_key: str
    user_id: str
    character_id: str
    turn_id: str
    message_ids: list[str]
    role: str
    occasion: str    # the turn's `herkunft`, in the row's column `origin`
    text: str
    created: float
    calendar_date: str


class MessageLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def append(self, entry: LoggedMessage) -> bool:
        """Write one row; False when a row with its `entry_key` exists already."""
        def write(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO messages (entry_key, user_id, character_id, turn_id, "
                "message_ids, role, origin, text, created, calendar_date) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (entry.entry_key, entry.user_id, entry.character_id, entry.turn_id,
                 json.dumps(entry.message_ids), entry.role, entry.occasion, entry.text,
                 entry.created, entry.calendar_date))
            return cursor.rowcount == 1

        return await self.db.execute_write_fn(write)

    async def mark_actions(self, user_id: str, character_id: str, turn_ids: Sequence[str],
                           succeeded: bool, at: float) -> None:
        """The action mark of the user turns `turn_ids`, as the session turn got it; a later
        mark of a turn replaces its earlier one (a rerun writes the same again)."""
        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO message_actions (user_id, character_id, turn_id, succeeded, "
                "marked_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, character_id, "
                "turn_id) DO UPDATE SET succeeded = excluded.succeeded, "
                "marked_at = excluded.marked_at",
                [(user_id, character_id, turn_id, int(succeeded), at) for turn_id in turn_ids])

        await self.db.execute_write_fn(write)

    async def for_user(self, user_id: str, *, character_id: str | None = None,
                       day: str | None = None) -> list[LoggedMessage]:
        """A user's rows in the order they were said (optionally one character, one day)."""
        sql = ("SELECT entry_key, user_id, character_id, turn_id, message_ids, role, origin, "
               "text, created, calendar_date FROM messages WHERE user_id = ?")
        params: list[object] = [user_id]
        if character_id is not None:
            sql += " AND character_id = ?"
            params.append(character_id)
        if day is not None:
            sql += " AND calendar_date = ?"
            params.append(day)
        sql += " ORDER BY created, id"

        def read(conn: sqlite3.Connection) -> list[LoggedMessage]:
            return [LoggedMessage(entry_key=row[0], user_id=row[1], character_id=row[2],
                                  turn_id=row[3], message_ids=json.loads(row[4]), role=row[5],
                                  occasion=row[6], text=row[7], created=row[8],
                                  calendar_date=row[9])
                    for row in conn.execute(sql, params)]

        return await self.db.execute_fn(read)
