"""The journal exporter: a user's journal entries with every version, over a range of days.

JSON document (`kind` "novaberg.journal", `format_version` 1): the head of
`exports.document_head` and `entries`, each `{entry_id, date, created_at, deleted_at,
current_version_id, versions: [{version_id, seq, origin, text, draft_id, created_at,
sources: [{conversation_id, message_id}], provenance: [{text, sources, origin, draft_id}]}],
media: [{asset_id, name, kind, bytes, sha256, created_at, file}]}` (`file`: the photo's path
in the data dir; `provenance`: where each sentence came from, none in a document from
before it was kept) — ids kept, so an import into another install adds what is missing and skips what is there: an entry whose id, or one of
whose version ids, exists already (whoever it belongs to) is skipped whole. A version id
twice in a document, or a `seq` twice in an entry, refuses the document. Entries in the
trash are not exported.

Markdown: one file for all (`# Journal`, one `## <date>` per entry with its current text),
or one file per entry titled with its date. One file per entry (`files`) is offered for JSON
too: each `<date>.json` a document of this kind with that one entry (it imports on its own).
An entry's photos go beside its file, in a folder per entry (`<date>/<photo's name>`), and
its Markdown file links them under the text. An import reads the photos' list but adds no
photo (a document carries no image bytes).
With a language (`de`, `en`) the words are the user's: `# Tagebuch`, `## Sonntag, 1. März
2026`; without one, the neutral form above (the CLI's default). The file names are the same
in every language: `<date>.md`, `<date>.json`.

Every export is read as it is written, entry by entry (`exports.stream`, `files`): memory
holds one entry, never the journal; a photo is named by its stored file's path and copied
from there as the zip or the folder is written, never read whole.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from app.backup.exports import (
    ExportError,
    ExportQuery,
    ImportResult,
    ImportTarget,
    Moment,
    Section,
    day_range,
    document_head,
    document_kind,
    read_document,
    require_date,
    require_key,
    require_text,
)
from app.core.i18n import long_date, texts
from app.journal.media import free_name, name_for_kind
from app.journal.rows import ensure_day, version_refs  # the journal's own row-level SQL
from app.journal.support import VersionSentence
from app.storage.connection import Connection
from app.storage.database import stream_rows

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
    # Each sentence the draft's or the user's edit (`journal_entry_versions.provenance_json`);
    # none in a document from before it was kept.
    provenance: list[VersionSentence] = []


class MediaItem(msgspec.Struct, forbid_unknown_fields=True):
    asset_id: str
    name: str
    kind: str
    bytes: int
    sha256: str
    created_at: Moment
    file: str


class Entry(msgspec.Struct, forbid_unknown_fields=True):
    entry_id: str
    date: str
    created_at: Moment
    current_version_id: str
    versions: list[Version]
    deleted_at: Moment | None = None
    media: list[MediaItem] = []


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
    return Entry(
        entry_id=current.entry_id,
        date=current.date,
        created_at=now,
        current_version_id=current.version_id,
        versions=[
            Version(
                version_id=current.version_id,
                seq=1,
                origin="restore",
                text=current.text,
                created_at=now,
            )
        ],
    )


class JournalExporter:
    name = "journal"
    document_kind = KIND
    also_reads: tuple[str, ...] = (CURRENT_ONLY_KIND,)

    def sections(self, conn: Connection, query: ExportQuery) -> list[Section]:
        return [("entries", (_entry(conn, row) for row in _entry_rows(conn, query)))]

    def markdown(
        self,
        conn: Connection,
        query: ExportQuery,
        head: dict[str, Any],
        language: str | None = None,
    ) -> Iterator[str]:
        title = texts("journal", language)["title"] if language else "Journal"
        yield f"# {title}\n\n"
        for n, (date, text) in enumerate(_current_texts(conn, query)):
            yield ("\n" if n else "") + f"## {_heading(date, language)}\n\n{text}\n"

    def files(
        self,
        conn: Connection,
        query: ExportQuery,
        fmt: Literal["md", "json"],
        language: str | None = None,
        data_path: Path | None = None,
    ) -> Iterator[tuple[str, str | Path]]:
        """One file per entry, named with its date: Markdown titled with the date (its
        photos linked under the text), or a JSON document of this kind holding that entry
        alone; with `data_path` (the files dir read from) each entry's photos too, in its
        folder `<date>/`, each as the path of its stored file (copied as it is written)."""
        head = document_head(KIND, query)
        for row in _entry_rows(conn, query):
            entry_id, date, _, current = row
            if fmt == "json":
                entry = _entry(conn, row)
                media = entry["media"]
                yield (
                    f"{date}.json",
                    json.dumps({**head, "entries": [entry]}, ensure_ascii=False, indent=1) + "\n",
                )
            else:
                media = _media(conn, entry_id)
                links = "".join(f"\n![{m['name']}](<{date}/{m['name']}>)\n" for m in media)
                yield (
                    f"{date}.md",
                    (
                        f"# {_heading(date, language)}\n\n"
                        f"{_current_text(conn, entry_id, current)}\n{links}"
                    ),
                )
            if data_path is not None:
                for item in media:
                    yield f"{date}/{item['name']}", data_path / item["file"]

    def import_document(self, conn: Connection, target: ImportTarget, raw: bytes) -> ImportResult:
        shape: type[CurrentOnlyDocument | JournalDocument] = (
            CurrentOnlyDocument if document_kind(raw) == CURRENT_ONLY_KIND else JournalDocument
        )
        document = read_document(raw, shape, "journal export")
        entries = (
            document.entries
            if isinstance(document, JournalDocument)
            else [_as_entry(e) for e in document.entries]
        )
        _check_all(entries)
        imported = 0
        for entry in entries:
            if _present(conn, entry):
                continue  # there already (its id or a version's id, anyone's): skipped
            day_id = ensure_day(conn, target.user_id, entry.date)
            if not conn.execute(
                "INSERT INTO journal_entries (entry_id, journal_day_id, "
                "current_version_id, created_at, deleted_at) VALUES (?, ?, ?, ?, NULL) "
                "ON CONFLICT DO NOTHING",
                (entry.entry_id, day_id, entry.current_version_id, entry.created_at),
            ).rowcount:
                # The day has another live entry here (never two, never overwritten), or
                # another process's import added this one since `_present` looked.
                continue
            for version in entry.versions:
                conn.execute(
                    "INSERT INTO journal_entry_versions (version_id, entry_id, seq, "
                    "origin, text, draft_id, created_at, provenance_json) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        version.version_id,
                        entry.entry_id,
                        version.seq,
                        version.origin,
                        version.text,
                        version.draft_id,
                        version.created_at,
                        msgspec.json.encode(version.provenance).decode(),
                    ),
                )
                conn.executemany(
                    "INSERT INTO journal_entry_version_source_refs (version_id, position, "
                    "conversation_id, message_id) VALUES (?, ?, ?, ?)",
                    [
                        (version.version_id, i, s.conversation_id, s.message_id)
                        for i, s in enumerate(version.sources)
                    ],
                )
            imported += 1
        return ImportResult(KIND, imported, len(entries) - imported)


def _heading(date: str, language: str | None) -> str:
    """An entry's heading: its date as the user writes it, or as it is (no language)."""
    return long_date(dt.date.fromisoformat(date), language) if language else date


def _present(conn: Connection, entry: Entry) -> bool:
    if conn.execute(
        "SELECT 1 FROM journal_entries WHERE entry_id = ?", (entry.entry_id,)
    ).fetchone():
        return True
    ids = [v.version_id for v in entry.versions]
    return (
        conn.execute(
            f"SELECT 1 FROM journal_entry_versions WHERE version_id IN "
            f"({', '.join('?' * len(ids))}) LIMIT 1",
            ids,
        ).fetchone()
        is not None
    )


def _entry_rows(conn: Connection, query: ExportQuery) -> Iterator[Any]:
    """(entry_id, date, created_at, current_version_id) of the query's entries not in the
    trash, by date, as they are read."""
    sql = (
        "SELECT e.entry_id, d.calendar_date, e.created_at, e.current_version_id "
        "FROM journal_entries e JOIN journal_days d ON d.day_id = e.journal_day_id "
        "JOIN journal_spaces s ON s.space_id = d.space_id "
        "WHERE s.user_id = ? AND e.deleted_at IS NULL"
    )
    params: list[Any] = [query.user_id]
    days, bounds = day_range("d.calendar_date", query)
    return stream_rows(conn, sql + days + " ORDER BY d.calendar_date", params + bounds)


def _entry(conn: Connection, row: Any) -> dict[str, Any]:
    entry_id, date, created_at, current = row
    versions = []
    for version in conn.execute(
        "SELECT version_id, seq, origin, text, draft_id, created_at, provenance_json FROM "
        "journal_entry_versions WHERE entry_id = ? ORDER BY seq",
        (entry_id,),
    ):
        sources = [
            {"conversation_id": c, "message_id": m} for c, m in version_refs(conn, version[0])
        ]
        versions.append(
            {
                "version_id": version[0],
                "seq": version[1],
                "origin": version[2],
                "text": version[3],
                "draft_id": version[4],
                "created_at": version[5],
                "sources": sources,
                "provenance": json.loads(version[6]),
            }
        )
    return {
        "entry_id": entry_id,
        "date": date,
        "created_at": created_at,
        "deleted_at": None,
        "current_version_id": current,
        "versions": versions,
        "media": _media(conn, entry_id),
    }


def _media(conn: Connection, entry_id: str) -> list[dict[str, Any]]:
    """The entry's photos as the document lists them (`file`: the path in the data dir),
    each named with its kind's extension (a row stored before names were, `evil.html`, is
    exported as `evil.png`) and no two alike."""
    taken: set[str] = set()
    media = []
    for r in conn.execute(
        "SELECT asset_id, name, kind, bytes, sha256, created_at, file FROM media_assets "
        "WHERE entry_id = ? ORDER BY created_at, asset_id",
        (entry_id,),
    ):
        name = free_name(name_for_kind(r[1], r[2]), taken)
        taken.add(name)
        media.append(
            {
                "asset_id": r[0],
                "name": name,
                "kind": r[2],
                "bytes": r[3],
                "sha256": r[4],
                "created_at": r[5],
                "file": r[6],
            }
        )
    return media


def _current_texts(conn: Connection, query: ExportQuery) -> Iterator[tuple[str, str]]:
    """(date, current text) of each entry the export holds."""
    for entry_id, date, _, current in _entry_rows(conn, query):
        yield date, _current_text(conn, entry_id, current)


def _current_text(conn: Connection, entry_id: str, current: str) -> str:
    row = conn.execute(
        "SELECT text FROM journal_entry_versions WHERE entry_id = ? AND version_id = ?",
        (entry_id, current),
    ).fetchone()
    return (row[0] if row else "").strip()


def _check_all(entries: list[Entry]) -> None:
    """Every entry is whole and every version id is unique in the document."""
    seen: set[str] = set()
    for entry in entries:
        _check(entry)
        for version in entry.versions:
            if version.version_id in seen:
                raise ExportError(
                    f"version id {version.version_id[:64]!r} appears twice in the document"
                )
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
