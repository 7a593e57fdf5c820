"""The long-term memory exporter: what a character remembers about its user (design §3a), per
character, corrected memories included.

JSON document (`kind` "novaberg.memories", `format_version` 1): the head of
`exports.document_head` and `memories`, each a row of table `memories` with its public id
kept — `memory_id`, `character_id`, `text`, `kind`, `importance`, `created_at`,
`refreshed_at`, `last_used_at`, `reflected_at`, `source_message_ids`, `superseded_by` (the
memory that corrected it, or null) and `calendar_date` (the day it was first told, in the
user's zone). `from`/`to` select by that day. An import adds the memories whose id is not
there yet (the FTS index follows through the table's triggers) and skips the others; a
memory forgotten here comes back only if an export that holds it is imported. A `memory_id`
must be of the shape the app makes and its routes take (`long_term.MEMORY_ID`, 32 lowercase
hex digits): one of another shape could be stored but never edited or forgotten by itself,
so the import is refused, naming it.

Markdown: one heading per character, each memory with its date and kind; a corrected one
names its correction.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

import msgspec

from app.backup.exports import (
    ExportError,
    ExportQuery,
    ImportResult,
    ImportTarget,
    Moment,
    Section,
    owner_filter,
    read_document,
    require_character,
    require_key,
    require_text,
)
from app.core.clock import calendar_date
from app.memory.long_term import KINDS, MEMORY_ID, insert_memory
from app.storage.connection import Connection
from app.storage.database import stream_rows

KIND = "novaberg.memories"

_COLUMNS = (
    "memory_id",
    "character_id",
    "text",
    "kind",
    "importance",
    "created_at",
    "refreshed_at",
    "last_used_at",
    "reflected_at",
    "source_message_ids",
    "superseded_by",
)


class ExportedMemory(msgspec.Struct, forbid_unknown_fields=True):
    memory_id: str
    character_id: str
    text: str
    kind: str
    importance: float
    created_at: Moment
    refreshed_at: Moment
    calendar_date: str = ""
    last_used_at: Moment | None = None
    reflected_at: Moment | None = None
    source_message_ids: list[str] = []
    superseded_by: str | None = None


class MemoryDocument(msgspec.Struct):
    kind: Literal["novaberg.memories"]
    format_version: Literal[1]
    memories: list[ExportedMemory]


class MemoryExporter:
    name = "memories"
    document_kind = KIND
    also_reads: tuple[str, ...] = ()

    def sections(self, conn: Connection, query: ExportQuery) -> list[Section]:
        return [("memories", _memories(conn, query))]

    def markdown(
        self,
        conn: Connection,
        query: ExportQuery,
        head: dict[str, Any],
        language: str | None = None,
    ) -> Iterator[str]:
        """In English whatever `language` asks (its words have no German yet)."""
        who = query.character_id
        owner, params = owner_filter(query)
        count = sum(
            1
            for (created,) in stream_rows(conn, f"SELECT created_at FROM memories{owner}", params)
            if _in_range(calendar_date(created, query.zone), query)
        )
        yield (f"# What {who} remembers" if who else "# What the characters remember") + "\n"
        yield (
            f"\nExported {head['exported_at']} from Novaberg {head['app_version']}"
            f" · {count} memories\n"
        )
        character = None
        for memory in _memories(conn, query):
            if memory["character_id"] != character:
                character = memory["character_id"]
                yield f"\n## {character}\n\n"
            line = (
                f"- ({memory['calendar_date']}, {memory['kind']}) "
                f"{' '.join(memory['text'].split())}"
            )
            if memory["superseded_by"]:
                line += f" — corrected by {memory['superseded_by']}"
            yield line + "\n"

    def import_document(self, conn: Connection, target: ImportTarget, raw: bytes) -> ImportResult:
        document = read_document(raw, MemoryDocument, "memory export")
        for memory in document.memories:
            _check(memory, target)
        imported = 0
        # By character (each one's in the document's order): two imports at once hold the
        # pairs in one order, so neither waits for a pair the other holds while holding one
        # it wants (PostgreSQL, `insert_memory`).
        for memory in sorted(document.memories, key=lambda memory: memory.character_id):
            imported += insert_memory(
                conn,
                {
                    "memory_id": memory.memory_id,
                    "user_id": target.user_id,
                    "character_id": memory.character_id,
                    "text": memory.text,
                    "kind": memory.kind,
                    "importance": memory.importance,
                    "created_at": memory.created_at,
                    "refreshed_at": memory.refreshed_at,
                    "last_used_at": memory.last_used_at,
                    "reflected_at": memory.reflected_at,
                    "source_message_ids": json.dumps(memory.source_message_ids),
                    "superseded_by": memory.superseded_by,
                },
            )
        return ImportResult(KIND, imported, len(document.memories) - imported)


def _memories(conn: Connection, query: ExportQuery) -> Iterator[dict[str, Any]]:
    """The query's memories, by character and the order they were told, as they are read."""
    owner, params = owner_filter(query)
    for row in stream_rows(
        conn,
        f"SELECT {', '.join(_COLUMNS)} FROM memories{owner} "
        "ORDER BY character_id, created_at, id DESC",
        params,
    ):
        memory = dict(zip(_COLUMNS, row, strict=True))
        memory["source_message_ids"] = json.loads(memory["source_message_ids"] or "[]")
        memory["calendar_date"] = day = calendar_date(memory["created_at"], query.zone)
        if not _in_range(day, query):
            continue
        yield memory


def _in_range(day: str, query: ExportQuery) -> bool:
    return not ((query.start and day < query.start) or (query.end and day > query.end))


def _check(memory: ExportedMemory, target: ImportTarget) -> None:
    where = f"memory {memory.memory_id[:64]!r}"
    require_key(where, memory_id=memory.memory_id, character_id=memory.character_id)
    if not MEMORY_ID.fullmatch(memory.memory_id):
        raise ExportError(f"{where}: memory_id is not 32 lowercase hex digits")
    require_text(where, memory.text)
    require_character(where, memory.character_id, target)
    if memory.kind not in KINDS:
        raise ExportError(f"{where}: kind {memory.kind!r} is not one of {', '.join(KINDS)}")
    if not 0.0 <= memory.importance <= 1.0:
        raise ExportError(f"{where}: importance {memory.importance} is not in [0, 1]")


MEMORIES = MemoryExporter()
