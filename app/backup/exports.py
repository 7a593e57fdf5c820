"""Exports and their import: a small registry of exporters, one per kind of document.

An exporter turns a user's data into a JSON document (`kind`, `format_version`, its items
with their ids) and that document into Markdown, and imports such a document into another
install without duplicates (the ids are kept, an item already present is skipped). Each
exporter is a module of this package listed in `app.backup.registry.EXPORTERS`; the CLI
(`novaberg export KIND`, `novaberg import FILE`) and the API (`/api/exports/{kind}`,
`POST /api/imports`) serve whatever is listed there. This module holds what exporters share,
so it imports none of them.

Exporters read and write through a `sqlite3.Connection` they are given: the app passes one
of its database's connections (the one writer for imports), the CLI its own.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

import msgspec

FORMAT_VERSION = 1

# A moment in an export document: epoch seconds from 1970 to the end of year 9999. A date and
# a local time can be made of every such value; a crafted file with another one would break
# every later view of what it imported (Markdown exports, the panels).
Moment = Annotated[float, msgspec.Meta(ge=0.0, le=253402300799.0)]


class ExportError(ValueError):
    """A bad query or document; the message says what is wrong. Nothing was written."""


@dataclass(frozen=True, slots=True)
class ExportQuery:
    """What to export. Dates are the user's calendar days, inclusive; None: no bound."""

    user_id: str
    character_id: str | None = None
    start: str | None = None
    end: str | None = None
    zone: dt.tzinfo | None = None  # for the local times in Markdown


@dataclass(frozen=True, slots=True)
class ImportResult:
    kind: str
    imported: int
    skipped: int

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "imported": self.imported, "skipped": self.skipped}


class Exporter(Protocol):
    name: str  # the CLI/API word: "chat", "journal"
    document_kind: str  # the document's "kind": "novaberg.chat"
    also_reads: tuple[str, ...]  # other kinds its import takes (older or narrower exports)

    def collect(self, conn: sqlite3.Connection, query: ExportQuery) -> dict[str, Any]: ...

    def markdown(self, document: dict[str, Any], zone: dt.tzinfo | None,
                 language: str | None = None) -> str:
        """The document for people; `language` (de, en) for its words where the exporter
        has them in both, None for the exporter's neutral form."""
        ...

    def import_document(self, conn: sqlite3.Connection, user_id: str,
                        raw: bytes) -> ImportResult: ...


def check_date(value: str | None, name: str) -> str | None:
    if value in (None, ""):
        return None
    try:
        return dt.date.fromisoformat(value).isoformat()
    except (TypeError, ValueError):
        raise ExportError(f"{name} {value!r} is not a date (YYYY-MM-DD)") from None


def make_query(user_id: str, character_id: str | None = None, start: str | None = None,
               end: str | None = None, zone: dt.tzinfo | None = None) -> ExportQuery:
    start, end = check_date(start, "from"), check_date(end, "to")
    if start and end and start > end:
        raise ExportError(f"from {start} is after to {end}")
    return ExportQuery(user_id, character_id or None, start, end, zone)


class _Head(msgspec.Struct):
    kind: str = ""
    format_version: int = 0


def read_head(raw: bytes) -> _Head:
    """The `kind` and `format_version` of a JSON export; ExportError if it is none."""
    try:
        return msgspec.json.decode(raw, type=_Head)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ExportError(f"not a Novaberg export: {exc}") from None


def document_kind(raw: bytes) -> str:
    """The `kind` a JSON export says it is."""
    return read_head(raw).kind


def document_head(kind: str, query: ExportQuery) -> dict[str, Any]:
    """The fields every export document starts with."""
    from app import __version__

    return {"kind": kind, "format_version": FORMAT_VERSION, "app_version": __version__,
            "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "user_id": query.user_id, "character_id": query.character_id,
            "from": query.start, "to": query.end}


def owner_filter(query: ExportQuery) -> tuple[str, list[Any]]:
    """The SQL condition that keeps the query's user's rows (and its character's, when it
    names one) — `" WHERE user_id = ? AND character_id = ?"` — and its parameters."""
    if query.character_id:
        return " WHERE user_id = ? AND character_id = ?", [query.user_id, query.character_id]
    return " WHERE user_id = ?", [query.user_id]


def day_range(column: str, query: ExportQuery) -> tuple[str, list[Any]]:
    """The SQL condition that keeps `column` (a calendar date) within the query's days —
    `" AND column >= ?"`, `" AND column <= ?"`, each where that bound is set — and its
    parameters."""
    sql, params = "", []
    if query.start:
        sql += f" AND {column} >= ?"
        params.append(query.start)
    if query.end:
        sql += f" AND {column} <= ?"
        params.append(query.end)
    return sql, params

