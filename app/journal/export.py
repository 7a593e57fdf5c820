"""Every current journal entry as Markdown or JSON (`GET /api/journal/export`, seed 004 §11):
the document only; the API streams it as a download.

`chunks` makes the download as the API streams it: the entries are read row by row
(`stream_rows`) and serialised `CHUNK_ENTRIES` at a time, so a journal of any length costs
the memory of one chunk; the bytes are those `as_json` (as `json.dumps` writes it) and
`as_markdown` give for the whole."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Literal

import msgspec

from app.storage.connection import Connection
from app.storage.database import stream_rows

EXPORT_KIND = "novaberg.journal_export"
FORMAT_VERSION = 1
CHUNK_ENTRIES = 200  # entries per chunk of the download: a few hundred KB at most
MARKDOWN_TITLE = "# Journal\n\n"
_LIVE_ENTRIES = (
    "SELECT e.entry_id, d.calendar_date, e.current_version_id, v.text FROM journal_entries e "
    "JOIN journal_days d ON d.day_id = e.journal_day_id "
    "JOIN journal_spaces s ON s.space_id = d.space_id "
    "LEFT JOIN journal_entry_versions v ON v.version_id = e.current_version_id "
    "WHERE s.user_id = ? AND e.deleted_at IS NULL ORDER BY d.calendar_date"
)


class ExportedEntry(msgspec.Struct):
    entry_id: str
    date: str
    text: str
    version_id: str | None


class JournalExport(msgspec.Struct):
    kind: str
    format_version: int
    entries: list[ExportedEntry]


def as_json(entries: Sequence[ExportedEntry]) -> JournalExport:
    return JournalExport(kind=EXPORT_KIND, format_version=FORMAT_VERSION, entries=list(entries))


def as_markdown(entries: Sequence[ExportedEntry]) -> str:
    return MARKDOWN_TITLE + "\n".join(_markdown_part(entry) for entry in entries)


def _markdown_part(entry: ExportedEntry) -> str:
    return f"## {entry.date}\n\n{entry.text.strip()}\n"


def chunks(conn: Connection, user_id: str, fmt: Literal["md", "json"]) -> Iterator[bytes]:
    """The export of `user_id`'s live entries, oldest day first, in chunks (for
    `Database.read_stream`): together the bytes of `as_markdown`, or of `as_json` as
    `json.dumps` writes it."""
    rows = stream_rows(conn, _LIVE_ENTRIES, (user_id,))
    entries = (ExportedEntry(r[0], r[1], r[3] or "", r[2]) for r in rows)
    if fmt == "md":
        return _markdown_chunks(entries)
    return _json_chunks(entries)


def _markdown_chunks(entries: Iterator[ExportedEntry]) -> Iterator[bytes]:
    yield MARKDOWN_TITLE.encode()
    first = True
    while batch := list(itertools.islice(entries, CHUNK_ENTRIES)):
        text = "\n".join(_markdown_part(entry) for entry in batch)
        yield (text if first else "\n" + text).encode()
        first = False


def _json_chunks(entries: Iterator[ExportedEntry]) -> Iterator[bytes]:
    head = json.dumps({"kind": EXPORT_KIND, "format_version": FORMAT_VERSION, "entries": []})
    yield head[: -len("[]}")].encode() + b"["
    first = True
    while batch := list(itertools.islice(entries, CHUNK_ENTRIES)):
        text = ", ".join(json.dumps(msgspec.to_builtins(item)) for item in batch)
        yield (text if first else ", " + text).encode()
        first = False
    yield b"]}"
