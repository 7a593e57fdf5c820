"""The journal exporter: a user's journal entries with every version, over a range of days.

JSON document (`kind` "novaberg.journal", `format_version` 1): the head of
`exports.document_head` and `entries`, each `{entry_id, date, created_at, deleted_at,
current_version_id, versions: [{version_id, seq, origin, text, draft_id, created_at,
sources: [{conversation_id, message_id}]}]}` — ids kept, so an import into another install
adds what is missing and skips what is there. Entries in the trash are not exported.

Markdown: one file for all (`# Journal`, one `## <date>` per entry with its current text),
or one file per entry titled with its date (`markdown_files`).
"""

from __future__ import annotations

import datetime as dt
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
    document_kind,
)
from app.journal.rows import ensure_day, version_refs  # the journal's own row-level SQL

KIND = "novaberg.journal"
# What `GET /api/journal/export?format=json` writes (app.journal.export): entries with their
# current text only. Imported as entries with that one version, ids kept.
CURRENT_ONLY_KIND = "novaberg.journal_export"


class SourceRef(msgspec.Struct, forbid_unknown_fields=True):
    conversation_id: str
    message_id: str


class Version(msgspec.Struct, forbid_unknown_fields=True):
    version_id: str
    seq: int
    origin: Literal["draft", "edit", "restore"]
    text: str
    created_at: Moment
    draft_id: str | None = None
    sources: list[SourceRef] = []


class Entry(msgspec.Struct, forbid_unknown_fields=True):
    entry_id: str
    date: str
    created_at: Moment
    current_version_id: str
    versions: list[Version]
    deleted_at: Moment | None = None


class JournalDocument(msgspec.Struct):
    kind: Literal["novaberg.journal"]
    format_version: Literal[1]
    entries: list[Entry]


class CurrentEntry(msgspec.Struct, forbid_unknown_fields=True):
    entry_id: str
    date: str
    text: str
    version_id: str


class CurrentOnlyDocument(msgspec.Struct):
    kind: Literal["novaberg.journal_export"]
    format_version: Literal[1]
    entries: list[CurrentEntry]


def _as_entry(current: CurrentEntry) -> Entry:
    now = time.time()
    return Entry(entry_id=current.entry_id, date=current.date, created_at=now,
                 current_version_id=current.version_id,
                 versions=[Version(version_id=current.version_id, seq=1, origin="restore",
                                   text=current.text, created_at=now)])


class JournalExporter:
    name = "journal"
    document_kind = KIND
    also_reads = (CURRENT_ONLY_KIND,)

    def sections(self, conn: sqlite3.Connection, query: ExportQuery) -> list[Section]:
        return [("entries", (_entry(conn, row) for row in _entry_rows(conn, query)))]

    def markdown(self, conn: sqlite3.Connection, query: ExportQuery,
                 head: dict[str, Any]) -> Iterator[str]:
        yield "# Journal\n\n"
        for n, (date, text) in enumerate(_current_texts(conn, query)):
            yield ("\n" if n else "") + f"## {date}\n\n{text}\n"

    def markdown_files(self, conn: sqlite3.Connection,
                       query: ExportQuery) -> Iterator[tuple[str, str]]:
        """One file per entry, named and titled with its date."""
        for date, text in _current_texts(conn, query):
            yield f"{date}.md", f"# {date}\n\n{text}\n"

    def import_document(self, conn: sqlite3.Connection, user_id: str,
                        raw: bytes) -> ImportResult:
        shape = CurrentOnlyDocument if document_kind(raw) == CURRENT_ONLY_KIND else JournalDocument
        try:
            document = decode_document(raw, shape)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ExportError(f"not a valid journal export: {exc}") from None
        entries = (document.entries if isinstance(document, JournalDocument)
                   else [_as_entry(e) for e in document.entries])
        for entry in entries:
            _check(entry)
        imported = 0
        for entry in entries:
            if conn.execute("SELECT 1 FROM journal_entries WHERE entry_id = ?",
                            (entry.entry_id,)).fetchone():
                continue  # there already: same id
            day_id = ensure_day(conn, user_id, entry.date)
            if conn.execute("SELECT 1 FROM journal_entries WHERE journal_day_id = ? AND "
                            "deleted_at IS NULL", (day_id,)).fetchone():
                continue  # the day has another entry here: never two, never overwritten
            conn.execute("INSERT INTO journal_entries (entry_id, journal_day_id, "
                         "current_version_id, created_at, deleted_at) VALUES (?, ?, ?, ?, NULL)",
                         (entry.entry_id, day_id, entry.current_version_id, entry.created_at))
            for version in entry.versions:
                conn.execute("INSERT INTO journal_entry_versions (version_id, entry_id, seq, "
                             "origin, text, draft_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (version.version_id, entry.entry_id, version.seq, version.origin,
                              version.text, version.draft_id, version.created_at))
                conn.executemany(
                    "INSERT INTO journal_entry_version_source_refs (version_id, position, "
                    "conversation_id, message_id) VALUES (?, ?, ?, ?)",
                    [(version.version_id, i, s.conversation_id, s.message_id)
                     for i, s in enumerate(version.sources)])
            imported += 1
        return ImportResult(KIND, imported, len(entries) - imported)


def _entry_rows(conn: sqlite3.Connection, query: ExportQuery) -> Iterator[Any]:
    """(entry_id, date, created_at, current_version_id) of the query's entries not in the
    trash, by date, as they are read."""
    sql = ("SELECT e.entry_id, d.calendar_date, e.created_at, e.current_version_id "
           "FROM journal_entries e JOIN journal_days d ON d.day_id = e.journal_day_id "
           "JOIN journal_spaces s ON s.space_id = d.space_id "
           "WHERE s.user_id = ? AND e.deleted_at IS NULL")
    params: list[Any] = [query.user_id]
    days, bounds = day_range("d.calendar_date", query)
    return iter(conn.execute(sql + days + " ORDER BY d.calendar_date", params + bounds))


def _entry(conn: sqlite3.Connection, row: Any) -> dict[str, Any]:
    entry_id, date, created_at, current = row
    versions = []
    for version in conn.execute(
            "SELECT version_id, seq, origin, text, draft_id, created_at FROM "
            "journal_entry_versions WHERE entry_id = ? ORDER BY seq", (entry_id,)):
        sources = [{"conversation_id": c, "message_id": m}
                   for c, m in version_refs(conn, version[0])]
        versions.append({"version_id": version[0], "seq": version[1], "origin": version[2],
                         "text": version[3], "draft_id": version[4],
                         "created_at": version[5], "sources": sources})
    return {"entry_id": entry_id, "date": date, "created_at": created_at, "deleted_at": None,
            "current_version_id": current, "versions": versions}


def _current_texts(conn: sqlite3.Connection, query: ExportQuery) -> Iterator[tuple[str, str]]:
    """(date, current text) of each entry the export holds."""
    for entry_id, date, _, current in _entry_rows(conn, query):
        row = conn.execute("SELECT text FROM journal_entry_versions WHERE entry_id = ? AND "
                           "version_id = ?", (entry_id, current)).fetchone()
        yield date, (row[0] if row else "").strip()


def _check(entry: Entry) -> None:
    try:
        dt.date.fromisoformat(entry.date)
    except ValueError:
        raise ExportError(f"entry {entry.entry_id!r}: date {entry.date!r} is not a date") from None
    if not entry.versions or entry.current_version_id not in {v.version_id for v in entry.versions}:
        raise ExportError(f"entry {entry.entry_id!r}: its current version is not among its "
                          "versions")


JOURNAL = JournalExporter()
