"""The journal exporter: a user's journal entries with every version, over a range of days.

JSON document (`kind` "novaberg.journal", `format_version` 1): the head of
`exports.document_head` and `entries`, each `{entry_id, date, created_at, deleted_at,
current_version_id, versions: [{version_id, seq, origin, text, draft_id, created_at,
sources: [{conversation_id, message_id}]}]}` — ids kept, so an import into another install
adds what is missing and skips what is there: an entry whose id, or one of whose version ids,
exists already (whoever it belongs to) is skipped whole. A version id twice in a document, or a
`seq` twice in an entry, refuses the document. Entries in the trash are not exported.

Markdown: one file for all (`# Journal`, one `## <date>` per entry with its current text),
or one file per entry titled with its date. One file per entry (`files`) is offered for JSON
too: each `<date>.json` a document of this kind with that one entry (it imports on its own).
With a language (`de`, `en`) the words are the user's: `# Tagebuch`, `## Sonntag, 1. März
2026`; without one, the neutral form above (the CLI's default). The file names are the same
in every language: `<date>.md`, `<date>.json`.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from typing import Annotated, Any, Literal

import msgspec

from app.backup.exports import (
    ExportError,
    ExportQuery,
    ImportResult,
    ImportTarget,
    Moment,
    day_range,
    document_head,
    document_kind,
    read_document,
    require_date,
    require_key,
    require_text,
)
from app.core.i18n import long_date, texts
from app.journal.rows import ensure_day, version_refs  # the journal's own row-level SQL

KIND = "novaberg.journal"
# What `GET /api/journal/export?format=json` writes (app.journal.export): entries with their
# current text only. Imported as entries with that one version, ids kept.
CURRENT_ONLY_KIND = "novaberg.journal_export"


class SourceRef(msgspec.Struct, forbid_unknown_fields=True):
    conversation_id: str
    message_id: str


# A version's number within its entry: from 1 (as the journal counts), and far below SQLite's
# largest integer, so that the next edit's `MAX(seq) + 1` is one too (a crafted 2**63 was a 500).
MAX_SEQ = 2**31 - 1
Seq = Annotated[int, msgspec.Meta(ge=1, le=MAX_SEQ)]


class Version(msgspec.Struct, forbid_unknown_fields=True):
    version_id: str
    seq: Seq
    origin: Literal["draft", "edit", "restore", "import"]
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

    def collect(self, conn: sqlite3.Connection, query: ExportQuery) -> dict[str, Any]:
        sql = ("SELECT e.entry_id, d.calendar_date, e.created_at, e.current_version_id "
               "FROM journal_entries e JOIN journal_days d ON d.day_id = e.journal_day_id "
               "JOIN journal_spaces s ON s.space_id = d.space_id "
               "WHERE s.user_id = ? AND e.deleted_at IS NULL")
        params: list[Any] = [query.user_id]
        days, bounds = day_range("d.calendar_date", query)
        sql += days + " ORDER BY d.calendar_date"
        params += bounds
        entries = []
        for entry_id, date, created_at, current in conn.execute(sql, params).fetchall():
            versions = []
            for row in conn.execute(
                    "SELECT version_id, seq, origin, text, draft_id, created_at FROM "
                    "journal_entry_versions WHERE entry_id = ? ORDER BY seq", (entry_id,)):
                sources = [{"conversation_id": c, "message_id": m}
                           for c, m in version_refs(conn, row[0])]
                versions.append({"version_id": row[0], "seq": row[1], "origin": row[2],
                                 "text": row[3], "draft_id": row[4], "created_at": row[5],
                                 "sources": sources})
            entries.append({"entry_id": entry_id, "date": date, "created_at": created_at,
                            "deleted_at": None, "current_version_id": current,
                            "versions": versions})
        return {**document_head(KIND, query), "entries": entries}

    def markdown(self, document: dict[str, Any], zone: dt.tzinfo | None,
                 language: str | None = None) -> str:
        parts = [f"## {_heading(date, language)}\n\n{text}\n"
                 for date, text in _current_texts(document)]
        title = texts("journal", language)["title"] if language else "Journal"
        return f"# {title}\n\n" + "\n".join(parts)

    def files(self, document: dict[str, Any], fmt: Literal["md", "json"],
              language: str | None = None) -> dict[str, str]:
        """One file per entry, named with its date: Markdown titled with the date, or a
        JSON document of this kind holding that entry alone."""
        if fmt == "json":
            head = {key: value for key, value in document.items() if key != "entries"}
            return {f"{entry['date']}.json": json.dumps({**head, "entries": [entry]},
                                                        ensure_ascii=False, indent=1) + "\n"
                    for entry in document["entries"]}
        return {f"{date}.md": f"# {_heading(date, language)}\n\n{text}\n"
                for date, text in _current_texts(document)}

    def import_document(self, conn: sqlite3.Connection, target: ImportTarget,
                        raw: bytes) -> ImportResult:
        shape = CurrentOnlyDocument if document_kind(raw) == CURRENT_ONLY_KIND else JournalDocument
        document = read_document(raw, shape, "journal export")
        entries = (document.entries if isinstance(document, JournalDocument)
                   else [_as_entry(e) for e in document.entries])
        _check_all(entries)
        imported = 0
        for entry in entries:
            if _present(conn, entry):
                continue  # there already (its id or a version's id, anyone's): skipped
            day_id = ensure_day(conn, target.user_id, entry.date)
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


def _heading(date: str, language: str | None) -> str:
    """An entry's heading: its date as the user writes it, or as it is (no language)."""
    return long_date(dt.date.fromisoformat(date), language) if language else date


def _present(conn: sqlite3.Connection, entry: Entry) -> bool:
    if conn.execute("SELECT 1 FROM journal_entries WHERE entry_id = ?",
                    (entry.entry_id,)).fetchone():
        return True
    ids = [v.version_id for v in entry.versions]
    return conn.execute(f"SELECT 1 FROM journal_entry_versions WHERE version_id IN "
                        f"({', '.join('?' * len(ids))}) LIMIT 1", ids).fetchone() is not None


def _current_texts(document: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for entry in document["entries"]:
        current = next(v for v in entry["versions"]
                       if v["version_id"] == entry["current_version_id"])
        out.append((entry["date"], current["text"].strip()))
    return out


def _check_all(entries: list[Entry]) -> None:
    """Every entry is whole and every version id is unique in the document."""
    seen: set[str] = set()
    for entry in entries:
        _check(entry)
        for version in entry.versions:
            if version.version_id in seen:
                raise ExportError(f"version id {version.version_id[:64]!r} appears twice in "
                                  "the document")
            seen.add(version.version_id)


def _check(entry: Entry) -> None:
    where = f"entry {entry.entry_id[:64]!r}"
    require_key(where, entry_id=entry.entry_id, current_version_id=entry.current_version_id)
    require_date(where, entry.date, "date")
    if not entry.versions or entry.current_version_id not in {v.version_id for v in entry.versions}:
        raise ExportError(f"{where}: its current version is not among its versions")
    seqs: set[int] = set()
    for version in entry.versions:
        require_key(where, version_id=version.version_id)
        require_text(f"{where}, version {version.version_id[:64]!r}", version.text)
        if version.seq in seqs:
            raise ExportError(f"{where}: seq {version.seq} appears twice")
        seqs.add(version.seq)


JOURNAL = JournalExporter()
