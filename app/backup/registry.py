"""The exporters there are, listed by hand: the one place that names them (the CLI's and the
API's choices come from here). Adding an export is a module with an `Exporter` and a line here."""

from __future__ import annotations

from app.backup.chat_export import CHAT
from app.backup.exports import FORMAT_VERSION, Exporter, ExportError, read_head
from app.backup.journal_export import JOURNAL
from app.backup.memory_export import MEMORIES

EXPORTERS: dict[str, Exporter] = {exporter.name: exporter for exporter in (CHAT, JOURNAL, MEMORIES)}


def exporter_named(name: str) -> Exporter:
    try:
        return EXPORTERS[name]
    except KeyError:
        raise ExportError(f"unknown export {name!r} (known: {', '.join(EXPORTERS)})") from None


def exporter_for_document(raw: bytes) -> Exporter:
    """The exporter that reads the document `raw` (by its `kind` and `format_version`)."""
    head = read_head(raw)
    for exporter in EXPORTERS.values():
        if head.kind in (exporter.document_kind, *exporter.also_reads):
            if head.format_version != FORMAT_VERSION:
                raise ExportError(
                    f"format_version {head.format_version} of {head.kind} is "
                    f"not supported (this version reads {FORMAT_VERSION})"
                )
            return exporter
    known = ", ".join(e.document_kind for e in EXPORTERS.values())
    raise ExportError(f"not a Novaberg export: kind {head.kind!r} (known: {known})")
