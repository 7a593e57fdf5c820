"""Every current journal entry as Markdown or JSON (`GET /api/journal/export`, seed 004 §11):
the document only; the API answers it as a download."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from app.journal.models import Entry

EXPORT_KIND = "novaberg.journal_export"
FORMAT_VERSION = 1


class ExportedEntry(msgspec.Struct):
    entry_id: str
    date: str
    text: str
    version_id: str | None


class JournalExport(msgspec.Struct):
    kind: str
    format_version: int
    entries: list[ExportedEntry]


def as_json(entries: Sequence[Entry]) -> JournalExport:
    return JournalExport(
        kind=EXPORT_KIND,
        format_version=FORMAT_VERSION,
        entries=[ExportedEntry(e.entry_id, e.date, e.text, e.current_version_id) for e in entries],
    )


def as_markdown(entries: Sequence[Entry]) -> str:
    parts = [f"## {entry.date}\n\n{entry.text.strip()}\n" for entry in entries]
    return "# Journal\n\n" + "\n".join(parts)
