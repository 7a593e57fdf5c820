"""The conversation exporter: a user's messages with one character (or all) over a range of
calendar days, from the durable message log (table `messages`, written by the dispatcher),
and what the user keeps with that character: its lists and reminders (Redis).

JSON document (`kind` "novaberg.chat", `format_version` 1): the head of
`exports.document_head`, `messages`, each a log row with its ids kept —
`entry_key` (the log's unique key: importing the same row again is a no-op), `turn_id`,
`message_ids`, `character_id`, `role` ("user" | "assistant"), `origin`, `text`, `created`
(epoch seconds), `at` (ISO 8601, UTC) and `calendar_date` —, `lists` (`character_id`,
`name`, `items`, `created_at`, `updated_at`) and `reminders` (`id`, `character_id`, `text`,
`due_at`, `created_at`, `status`, `fired_at`, `trigger_turn_id`, `impulse_turn_id`). Lists
and reminders are the ones kept now, whatever the day range (they belong to no day).

Markdown: one heading per calendar day, each message with its local time and speaker; then
the lists with their items and the reminders with their local due times.

The messages are read from and written to SQLite (`sections`, `markdown`, `import_document`,
on the database's threads, streamed: `exports.stream`); the lists and reminders from and to
Redis (`collect_kept`, `import_kept`, on the event loop; they are few and small), handed to
the stream as its `kept` lists. An import checks the whole document first: a bad list or
reminder refuses it before anything is written. It adds what is missing — a list that is
not there, an item a list lacks, a reminder whose id is not there (ids kept: importing twice
adds nothing) — and never changes what is there.

One module: one exporter — its document, its export and its import are the two sides of one
format.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Annotated, Any, Literal, TypeVar

import msgspec
import redis.asyncio as aioredis

from app.backup.exports import (
    Counted,
    ExportQuery,
    ImportResult,
    ImportTarget,
    Moment,
    Section,
    day_range,
    owner_filter,
    read_document,
    require_character,
    require_date,
    require_key,
    require_text,
)
from app.core.clock import local_moment
from app.memory import keys
from app.memory.lists import ListStore
from app.memory.reminders import Reminder, ReminderStore
from app.storage import dialect
from app.storage.connection import Connection
from app.storage.database import stream_rows
from app.storage.redis_driver import async_client

KIND = "novaberg.chat"
T = TypeVar("T")


# gc=False, and a tuple (which the collector drops once it holds only strings): an import of
# 100 000 messages would otherwise add a few hundred thousand objects to every full garbage
# collection while it runs, and such a walk may fall to the event loop's thread.
class ChatMessage(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    entry_key: str
    turn_id: str
    character_id: str
    role: Literal["user", "assistant"]
    text: str
    created: Moment
    calendar_date: str
    message_ids: tuple[str, ...] = ()
    origin: str = ""
    at: str | None = None


NonEmpty = Annotated[str, msgspec.Meta(min_length=1, max_length=20_000)]


class KeptList(msgspec.Struct, forbid_unknown_fields=True):
    character_id: NonEmpty
    name: NonEmpty
    items: list[NonEmpty] = []
    created_at: Moment = 0.0
    updated_at: Moment = 0.0


class KeptReminder(msgspec.Struct, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    character_id: NonEmpty
    text: NonEmpty
    due_at: Moment
    created_at: Moment
    status: Literal["pending", "claimed", "fired", "done"] = "pending"
    fired_at: Moment | None = None
    trigger_turn_id: str | None = None
    impulse_turn_id: str | None = None


class ChatDocument(msgspec.Struct):
    kind: Literal["novaberg.chat"]
    format_version: Literal[1]
    messages: list[ChatMessage]
    lists: list[KeptList] = []
    reminders: list[KeptReminder] = []


class Kept(msgspec.Struct, frozen=True):
    """What the user keeps with the characters of an export, read from Redis before the
    export is streamed (`exports.stream`'s `kept`: each field a section of the document)."""

    lists: list[KeptList]
    reminders: list[KeptReminder]


class KeptDocument(msgspec.Struct):
    """A chat export without its messages (skipped unread: they are `import_document`'s)."""

    kind: Literal["novaberg.chat"]
    format_version: Literal[1]
    lists: list[KeptList] = []
    reminders: list[KeptReminder] = []


class ChatExporter:
    name = "chat"
    document_kind = KIND
    also_reads: tuple[str, ...] = ()

    def sections(self, conn: Connection, query: ExportQuery) -> list[Section]:
        return [("messages", map(_message, _rows(conn, query, _COLUMNS)))]

    def markdown(
        self,
        conn: Connection,
        query: ExportQuery,
        head: dict[str, Any],
        language: str | None = None,
    ) -> Iterator[str]:
        """In English whatever `language` asks (its words have no German yet)."""
        who = query.character_id or "all characters"
        span = " – ".join(d for d in (query.start, query.end) if d)
        count = next(_rows(conn, query, "COUNT(*)"))[0]
        yield (
            f"# Conversation with {who}\n\n"
            f"Exported {head['exported_at']} from Novaberg {head['app_version']}"
            f"{' · ' + span if span else ''} · {count} messages\n"
        )
        day = None
        for _, _, _, character_id, role, _, text, created, calendar in _rows(conn, query, _COLUMNS):
            if calendar != day:
                day = calendar
                yield f"\n## {day}\n"
            speaker = "You" if role == "user" else character_id
            time = local_moment(created, query.zone).strftime("%H:%M")
            yield f"\n**{speaker}** · {time}\n\n{_quote_free(text)}\n"
        kept = _kept_markdown(head, query.zone)
        if kept:
            yield "\n" + "\n".join(kept).rstrip() + "\n"

    def import_document(self, conn: Connection, target: ImportTarget, raw: bytes) -> ImportResult:
        document = read_document(raw, ChatDocument, "conversation export")
        for message in document.messages:
            _check(message, target)
        now = time.time()  # `imported_at`: the chat page names the row as imported
        rows = (
            (
                message.entry_key,
                target.user_id,
                message.character_id,
                message.turn_id,
                json.dumps(message.message_ids),
                message.role,
                message.origin,
                message.text,
                message.created,
                message.calendar_date,
                now,
            )
            for message in document.messages
        )
        imported = _append_log_rows(conn, rows, now)
        return ImportResult(KIND, imported, len(document.messages) - imported)

    # --- what the user keeps with the character (Redis) -----------------------------------

    async def collect_kept(
        self, redis: aioredis.Redis, query: ExportQuery, character_ids: list[str]
    ) -> Kept:
        """The lists and reminders of the query's user with `character_ids`."""
        lists: list[KeptList] = []
        reminders: list[KeptReminder] = []
        for character_id in character_ids:
            lists.extend(
                KeptList(
                    character_id=character_id,
                    name=kept.name,
                    items=kept.items,
                    created_at=kept.created_at,
                    updated_at=kept.updated_at,
                )
                for kept in await ListStore(redis, query.user_id, character_id).all()
            )
            reminders.extend(
                KeptReminder(
                    id=reminder.id,
                    character_id=character_id,
                    text=reminder.text,
                    due_at=reminder.due_at,
                    created_at=reminder.created_at,
                    status=reminder.status,
                    fired_at=reminder.fired_at,
                    trigger_turn_id=reminder.trigger_turn_id,
                    impulse_turn_id=reminder.impulse_turn_id,
                )
                for reminder in await ReminderStore(redis).list(query.user_id, character_id)
            )
        return Kept(lists, reminders)

    async def kept_characters(
        self, redis: aioredis.Redis, query: ExportQuery, defined: list[str]
    ) -> list[str]:
        """The characters whose lists and reminders an export carries: the one asked for,
        or every character `defined` and every one the user has talked with."""
        if query.character_id:
            return [query.character_id]
        talked = [
            character
            for user, character in map(
                keys.split_pair, keys.texts(await redis.smembers(keys.known_pairs()))
            )
            if user == query.user_id
        ]
        return list(dict.fromkeys([*defined, *sorted(talked)]))

    def read_kept(self, raw: bytes, target: ImportTarget) -> KeptDocument:
        """The document's lists and reminders, checked whole (ExportError): read before
        anything is written; a list or reminder of a character this install does not have
        refuses it."""
        document = read_document(raw, KeptDocument, "conversation export")
        for kept in document.lists:
            require_character(f"list {kept.name[:64]!r}", kept.character_id, target)
        for reminder in document.reminders:
            require_character(f"reminder {reminder.id!r}", reminder.character_id, target)
        return document

    async def import_kept(
        self, redis: aioredis.Redis, user_id: str, document: KeptDocument
    ) -> dict[str, Counted]:
        """Add the lists, items and reminders the user lacks; per part (`lists`,
        `reminders`) how many were imported and skipped (items for lists, reminders by id)."""
        added_items = skipped_items = 0
        for kept in document.lists:
            store = ListStore(redis, user_id, kept.character_id)
            change = await store.merge(
                kept.name, list(kept.items), kept.created_at, kept.updated_at
            )
            added_items += len(change.added) + (1 if change.created and not kept.items else 0)
            skipped_items += len(change.already)
        reminders = [
            Reminder(
                id=r.id,
                user_id=user_id,
                character_id=r.character_id,
                text=r.text,
                due_at=r.due_at,
                created_at=r.created_at,
                status="pending" if r.status == "claimed" else r.status,
                fired_at=r.fired_at,
                trigger_turn_id=r.trigger_turn_id,
                impulse_turn_id=r.impulse_turn_id,
            )
            for r in document.reminders
        ]
        added = await ReminderStore(redis).restore(reminders)
        return {
            "lists": Counted(added_items, skipped_items),
            "reminders": Counted(added, len(reminders) - added),
        }


def with_parts(result: ImportResult, kept: dict[str, Counted]) -> ImportResult:
    """A chat import's answer: the totals over its parts, and `parts` — the messages', and
    the lists' and reminders' of `import_kept`."""
    parts = {"messages": Counted(result.imported, result.skipped), **kept}
    return ImportResult(
        result.kind,
        imported=sum(p.imported for p in parts.values()),
        skipped=sum(p.skipped for p in parts.values()),
        parts=parts,
    )


async def on_redis(url: str, work: Callable[[aioredis.Redis], Awaitable[T]]) -> T:
    """`work` with an asyncio client of the Redis at `url` (the command line's way to the
    stores, which the app reaches through its own pool), closed afterwards."""
    client = async_client(url, decode_responses=True)
    try:
        return await work(client)
    finally:
        await client.aclose()


def _kept_markdown(document: dict[str, Any], zone: dt.tzinfo | None) -> list[str]:
    """The lists and reminders of a chat export (`document`: its head, with the `Kept`
    lists `exports.stream` was handed), as lines."""
    lines: list[str] = []
    kept_lists: list[KeptList] = document.get("lists") or []
    kept_reminders: list[KeptReminder] = document.get("reminders") or []
    if kept_lists:
        lines += ["## Lists", ""]
        for kept in kept_lists:
            lines += [f"### {kept.name} ({kept.character_id})", ""]
            lines += [f"- {_one_line(item)}" for item in kept.items] or ["(empty)"]
            lines.append("")
    if kept_reminders:
        lines += ["## Reminders", ""]
        for reminder in kept_reminders:
            when = local_moment(reminder.due_at, zone).strftime("%Y-%m-%d %H:%M")
            lines.append(
                f"- {when} · {_one_line(reminder.text)} · {reminder.status} "
                f"({reminder.character_id})"
            )
        lines.append("")
    return lines


_COLUMNS = (
    "entry_key, turn_id, message_ids, character_id, role, origin, text, created, calendar_date"
)


def _rows(conn: Connection, query: ExportQuery, columns: str) -> Iterator[Any]:
    """The query's rows of the message log, in the order they were said, as they are read."""
    owner, params = owner_filter(query)
    days, bounds = day_range("calendar_date", query)
    order = "" if columns.startswith("COUNT") else " ORDER BY created, id"
    return stream_rows(conn, f"SELECT {columns} FROM messages{owner}{days}{order}", params + bounds)


def _message(row: Any) -> dict[str, Any]:
    return {
        "entry_key": row[0],
        "turn_id": row[1],
        "message_ids": json.loads(row[2]),
        "character_id": row[3],
        "role": row[4],
        "origin": row[5],
        "text": row[6],
        "created": row[7],
        "at": local_moment(row[7], dt.UTC).isoformat(timespec="seconds"),
        "calendar_date": row[8],
    }


_INSERT_LOG_ROW = (
    "INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
    "message_ids, role, origin, text, created, calendar_date, imported_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_SEARCH_TRIGGER = "messages_fts_insert"  # m010's trigger: the search index of each new row


def _append_log_rows(conn: Any, rows: Iterable[tuple[Any, ...]], imported_at: float) -> int:
    """Insert the rows (a row whose `entry_key` is there already is skipped) in one
    `executemany`; returns how many were new — the rows after the log's last id that carry
    this import's `imported_at` (on PostgreSQL another process may append meanwhile).

    On SQLite the search index (`messages_fts`, trigram) is filled once for all new rows
    instead of row by row by its insert trigger: that trigger is dropped for the bulk
    insert and created again from its own stored SQL, in the caller's transaction (DDL is
    transactional in SQLite: a failed import leaves trigger and index as they were). Row by
    row, the trigger made a 50 MB import several times slower. The caller commits or rolls
    back (`with conn`)."""
    before = conn.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]
    trigger = (
        None
        if dialect.is_postgres(conn)
        else conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?", (_SEARCH_TRIGGER,)
        ).fetchone()
    )
    if trigger is not None:
        if not conn.in_transaction:  # sqlite3 opens one only before DML, not before DDL
            conn.execute("BEGIN")
        conn.execute(f"DROP TRIGGER {_SEARCH_TRIGGER}")
    conn.executemany(_INSERT_LOG_ROW, rows)
    if trigger is not None:
        conn.execute(
            "INSERT INTO messages_fts (rowid, text) SELECT id, text FROM messages WHERE id > ?",
            (before,),
        )
        conn.execute(trigger[0])
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM messages WHERE id > ? AND imported_at = ?", (before, imported_at)
        ).fetchone()[0]
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _check(message: ChatMessage, target: ImportTarget) -> None:
    where = f"message {message.entry_key[:64]!r}"
    require_key(
        where,
        entry_key=message.entry_key,
        turn_id=message.turn_id,
        character_id=message.character_id,
    )
    require_date(where, message.calendar_date, "calendar_date")
    require_text(where, message.text)
    require_character(where, message.character_id, target)


def _quote_free(text: str) -> str:
    """The text as Markdown paragraphs: a line that would read as a heading is escaped."""
    return "\n".join("\\" + line if line.startswith("#") else line for line in text.splitlines())


CHAT = ChatExporter()
