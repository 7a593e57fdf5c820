"""The durable message log in SQLite (table `messages`, migration `m002_messages`), and the
outbox that makes a committed turn's rows certain.

The dispatcher appends one row per stored turn through the database's single writer; the
journal reads a user's day from it. Rows are never updated. `entry_key` makes writing the
same turn twice (a rerun after a crash) a no-op.

A turn is committed to Redis in one atomic step (`app.memory.commit`) and its row lands in
SQLite after it: a process that dies in between would lose the row for good (the rerun finds
the turn stored and writes nothing). So the row is promised in the commit itself: `LogOutbox`
pushes it onto the pair's outbox list (`keys.message_outbox`) in the same step, then appends
what the outbox holds to SQLite (idempotent by `entry_key`) and only then takes it off. The
commit's own step reads the outbox back, so the rows promised earlier and not yet appended
(the database was busy, the process died) go along with the next turn's; the runtime's
recovery delivers what is left at start (`deliver_all`).

A user turn's action mark (an agent carried out what the turn asked, or failed to) comes
later in the turn than its row, so it is kept beside the log in `message_actions` (migration
`m009_journal_marks`): the journal lists the lines the character carried out apart from the
day's story.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import redis.asyncio as aioredis

from app.core.lifetime import crash_point
from app.core.log import fields
from app.core.settings import CrashPoint, Settings
from app.memory import keys
from app.memory.commit import Blind
from app.storage.database import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LoggedMessage:
    entry_key: str
    user_id: str
    character_id: str
    turn_id: str
    message_ids: list[str]
    role: str
    occasion: str  # the turn's `herkunft`, in the row's column `origin`
    text: str
    created: float
    calendar_date: str


class MessageLog:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def append(self, entry: LoggedMessage) -> bool:
        """Write one row; False when a row with its `entry_key` exists already."""
        [written] = await self.append_all([entry])
        return written

    async def append_all(self, entries: Sequence[LoggedMessage]) -> list[bool]:
        """Write the rows in one transaction; per row False when its `entry_key` exists."""

        def write(conn: sqlite3.Connection) -> list[bool]:
            return [
                conn.execute(
                    "INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                    "message_ids, role, origin, text, created, calendar_date) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (
                        entry.entry_key,
                        entry.user_id,
                        entry.character_id,
                        entry.turn_id,
                        json.dumps(entry.message_ids),
                        entry.role,
                        entry.occasion,
                        entry.text,
                        entry.created,
                        entry.calendar_date,
                    ),
                ).rowcount
                == 1
                for entry in entries
            ]

        return await self.db.execute_write_fn(write)

    async def mark_actions(
        self, user_id: str, character_id: str, turn_ids: Sequence[str], succeeded: bool, at: float
    ) -> None:
        """The action mark of the user turns `turn_ids`, as the session turn got it; a later
        mark of a turn replaces its earlier one (a rerun writes the same again)."""

        def write(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO message_actions (user_id, character_id, turn_id, succeeded, "
                "marked_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (user_id, character_id, "
                "turn_id) DO UPDATE SET succeeded = excluded.succeeded, "
                "marked_at = excluded.marked_at",
                [(user_id, character_id, turn_id, int(succeeded), at) for turn_id in turn_ids],
            )

        await self.db.execute_write_fn(write)

    async def for_user(
        self, user_id: str, *, character_id: str | None = None, day: str | None = None
    ) -> list[LoggedMessage]:
        """A user's rows in the order they were said (optionally one character, one day)."""
        sql = (
            "SELECT entry_key, user_id, character_id, turn_id, message_ids, role, origin, "
            "text, created, calendar_date FROM messages WHERE user_id = ?"
        )
        params: list[object] = [user_id]
        if character_id is not None:
            sql += " AND character_id = ?"
            params.append(character_id)
        if day is not None:
            sql += " AND calendar_date = ?"
            params.append(day)
        sql += " ORDER BY created, id"

        def read(conn: sqlite3.Connection) -> list[LoggedMessage]:
            return [
                LoggedMessage(
                    entry_key=row[0],
                    user_id=row[1],
                    character_id=row[2],
                    turn_id=row[3],
                    message_ids=json.loads(row[4]),
                    role=row[5],
                    occasion=row[6],
                    text=row[7],
                    created=row[8],
                    calendar_date=row[9],
                )
                for row in conn.execute(sql, params)
            ]

        return await self.db.execute_fn(read)


@dataclass(slots=True)
class Promise:
    """A row promised in a turn's commit: `write` is the commit's part; after the commit,
    `pending` holds the pair's outbox as that same step left it (this row among them)."""

    user_id: str
    character_id: str
    entry: LoggedMessage
    write: Blind = field(init=False)
    pending: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        outbox = keys.message_outbox(self.user_id, self.character_id)
        raw = _ENCODE(self.entry).decode()

        pair = keys.pair_id(self.user_id, self.character_id)

        def queue(pipe: Any) -> Callable[[list[Any]], None]:
            pipe.rpush(outbox, raw)
            pipe.sadd(keys.known_pairs(), pair)  # where recovery looks for outboxes
            pipe.lrange(outbox, 0, -1)
            return self._picked

        self.write = Blind(queue)

    def _picked(self, results: list[Any]) -> None:
        self.pending = list(results[-1])


_ENCODE = msgspec.json.Encoder().encode
_DECODE = msgspec.json.Decoder(LoggedMessage).decode


class LogOutbox:
    """Rows promised in Redis commits, appended to the log (see the module)."""

    def __init__(self, redis: aioredis.Redis, message_log: MessageLog, settings: Settings) -> None:
        self.redis = redis
        self.log = message_log
        self.settings = settings

    def promise(self, entry: LoggedMessage) -> Promise:
        return Promise(entry.user_id, entry.character_id, entry)

    async def deliver(
        self,
        user_id: str,
        character_id: str,
        pending: list[str] | None = None,
        *,
        crash_at: CrashPoint | None = None,
    ) -> dict[str, bool]:
        """Append the pair's promised rows (`pending`: the outbox as a commit read it; None:
        read it now) and take them off the outbox; per entry_key whether it was new.
        `crash_at`: the crash tests' point between the append and the taking off."""
        outbox = keys.message_outbox(user_id, character_id)
        if pending is None:
            pending = keys.texts(await self.redis.lrange(outbox, 0, -1))
        if not pending:
            return {}
        entries = [_DECODE(raw) for raw in pending]
        written = await self.log.append_all(entries)
        if crash_at is not None:
            crash_point(self.settings, crash_at)
        async with self.redis.pipeline(transaction=False) as pipe:
            for raw in dict.fromkeys(pending):
                pipe.lrem(outbox, 0, raw)
            await pipe.execute()
        return {entry.entry_key: new for entry, new in zip(entries, written, strict=True)}

    async def deliver_all(self) -> int:
        """At start: every pair's promised rows; returns how many rows were new."""
        pairs = sorted(keys.texts(await self.redis.smembers(keys.known_pairs())))
        async with self.redis.pipeline(transaction=False) as pipe:
            for pair in pairs:
                pipe.llen(keys.message_outbox(*keys.split_pair(pair)))
            lengths = await pipe.execute()
        added = 0
        for pair, length in zip(pairs, lengths, strict=True):
            if length:
                delivered = await self.deliver(*keys.split_pair(pair))
                added += sum(delivered.values())
        if added:
            log.warning(
                "message-log rows of committed turns appended after a crash",
                extra=fields(rows=added),
            )
        return added
