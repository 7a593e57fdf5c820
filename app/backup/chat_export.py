"""The conversation exporter: a user's messages with one character (or all) over a range of
calendar days, from the durable message log (table `messages`, written by the dispatcher).

JSON document (`kind` "novaberg.chat", `format_version` 1): the head of
`exports.document_head` and `messages`, each a log row with its ids kept —
`entry_key` (the log's unique key: importing the same row again is a no-op), `turn_id`,
`message_ids`, `character_id`, `role` ("user" | "assistant"), `origin`, `text`, `created`
(epoch seconds), `at` (ISO 8601, UTC) and `calendar_date`.

Markdown: one heading per calendar day, each message with its local time and speaker.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from collections.abc import Iterator
from typing import Any, Literal

import msgspec

from app.backup.exports import (
    ExportError,
    decode_document,
    ExportQuery,
    ImportResult,
    Moment,
    Section,
    day_range,
    owner_filter,
)
from app.core.clock import local_moment

KIND = "novaberg.chat"


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


class ChatDocument(msgspec.Struct):
    kind: Literal["novaberg.chat"]
    format_version: Literal[1]
    messages: list[ChatMessage]


class ChatExporter:
    name = "chat"
    document_kind = KIND
    also_reads: tuple[str, ...] = ()

    def sections(self, conn: sqlite3.Connection, query: ExportQuery) -> list[Section]:
        return [("messages", map(_message, _rows(conn, query, _COLUMNS)))]

    def markdown(self, conn: sqlite3.Connection, query: ExportQuery,
                 head: dict[str, Any]) -> Iterator[str]:
        who = query.character_id or "all characters"
        span = " – ".join(d for d in (query.start, query.end) if d)
        count = next(_rows(conn, query, "COUNT(*)"))[0]
        yield (f"# Conversation with {who}\n\n"
               f"Exported {head['exported_at']} from Novaberg {head['app_version']}"
               f"{' · ' + span if span else ''} · {count} messages\n")
        day = None
        for _, _, _, character_id, role, _, text, created, calendar in _rows(conn, query,
                                                                            _COLUMNS):
            if calendar != day:
                day = calendar
                yield f"\n## {day}\n"
            speaker = "You" if role == "user" else character_id
            time = local_moment(created, query.zone).strftime("%H:%M")
            yield f"\n**{speaker}** · {time}\n\n{_quote_free(text)}\n"

    def import_document(self, conn: sqlite3.Connection, user_id: str,
                        raw: bytes) -> ImportResult:
        try:
            document = decode_document(raw, ChatDocument)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ExportError(f"not a valid conversation export: {exc}") from None
        for message in document.messages:
            try:
                dt.date.fromisoformat(message.calendar_date)
            except ValueError:
                raise ExportError(f"message {message.entry_key!r}: calendar_date "
                                  f"{message.calendar_date!r} is not a date") from None
        imported = 0
        now = time.time()  # `imported_at`: the chat page names the row as imported
        for message in document.messages:
            cursor = conn.execute(
                "INSERT OR IGNORE INTO messages (entry_key, user_id, character_id, turn_id, "
                "message_ids, role, origin, text, created, calendar_date, imported_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (message.entry_key, user_id, message.character_id, message.turn_id,
                 json.dumps(message.message_ids), message.role, message.origin, message.text,
                 message.created, message.calendar_date, now))
            imported += cursor.rowcount
        return ImportResult(KIND, imported, len(document.messages) - imported)


_COLUMNS = ("entry_key, turn_id, message_ids, character_id, role, origin, text, created, "
            "calendar_date")


def _rows(conn: sqlite3.Connection, query: ExportQuery, columns: str) -> Iterator[Any]:
    """The query's rows of the message log, in the order they were said, as they are read."""
    owner, params = owner_filter(query)
    days, bounds = day_range("calendar_date", query)
    order = "" if columns.startswith("COUNT") else " ORDER BY created, id"
    return iter(conn.execute(f"SELECT {columns} FROM messages{owner}{days}{order}",  # noqa: S608
                             params + bounds))


def _message(row: Any) -> dict[str, Any]:
    return {"entry_key": row[0], "turn_id": row[1], "message_ids": json.loads(row[2]),
            "character_id": row[3], "role": row[4], "origin": row[5], "text": row[6],
            "created": row[7],
            "at": dt.datetime.fromtimestamp(row[7], dt.UTC).isoformat(timespec="seconds"),
            "calendar_date": row[8]}


def _quote_free(text: str) -> str:
    """The text as Markdown paragraphs: a line that would read as a heading is escaped."""
    return "\n".join("\\" + line if line.startswith("#") else line for line in text.splitlines())


CHAT = ChatExporter()
