"""Exports and their import: a small registry of exporters, one per kind of document.

An exporter turns a user's data into a JSON document (`kind`, `format_version`, its items
with their ids) and that document into Markdown, and imports such a document into another
install without duplicates (the ids are kept, an item already present is skipped — whoever
it belongs to). An import checks the whole document before it writes anything: canonical
dates (`clock.read_date`), moments from 1970 to 9999, no empty text or key, only characters
this install knows (`ImportTarget.characters`); a document that fails is refused whole. Each
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
from collections.abc import Collection
from dataclasses import dataclass
from typing import Annotated, Any, Protocol, TypeVar

import msgspec

from app.core import json_input
from app.core.clock import FIRST_MOMENT, LAST_MOMENT, read_date
from app.core.text import is_blank

FORMAT_VERSION = 1
T = TypeVar("T")

# A moment in an export document: epoch seconds from 1970 to the end of year 9999. A date and
# a local time can be made of every such value; a crafted file with another one would break
# every later view of what it imported (Markdown exports, the panels).
Moment = Annotated[float, msgspec.Meta(ge=FIRST_MOMENT, le=LAST_MOMENT)]


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
class ImportTarget:
    """Whose data an import goes into, and the characters this install has (an item of
    another character could never be shown or exported here)."""

    user_id: str
    characters: Collection[str]


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

    def import_document(self, conn: sqlite3.Connection, target: ImportTarget,
                        raw: bytes) -> ImportResult: ...


def check_date(value: str | None, name: str) -> str | None:
    if value in (None, ""):
        return None
    try:
        return read_date(value)
    except ValueError as exc:
        raise ExportError(f"{name} {exc}") from None


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
        return json_input.decode(raw, _Head)
    except json_input.JsonInputError as exc:
        raise ExportError(f"not a Novaberg export: {exc}") from None


def read_document(raw: bytes, shape: type[T], noun: str) -> T:
    """The document `raw` as `shape`; ExportError (naming `noun`) if it is not one."""
    try:
        return json_input.decode(raw, shape)
    except json_input.NotJson as exc:
        raise ExportError(f"not a valid {noun}: not JSON: {exc}") from None
    except json_input.WrongShape as exc:
        raise ExportError(f"not a valid {noun}: {exc}") from None


# --- checks an import runs on every item before it writes anything -----------------------------

def require_key(where: str, **values: str) -> None:
    """ExportError when one of the named ids is empty."""
    for name, value in values.items():
        if not value.strip():
            raise ExportError(f"{where}: {name} is empty")


def require_text(where: str, text: str, name: str = "text") -> None:
    if is_blank(text):
        raise ExportError(f"{where}: {name} is empty")


def require_date(where: str, value: str, name: str) -> None:
    try:
        read_date(value)
    except ValueError as exc:
        raise ExportError(f"{where}: {name} {exc}") from None


def require_character(where: str, character_id: str, target: ImportTarget) -> None:
    if character_id not in target.characters:
        raise ExportError(f"{where}: character {character_id[:64]!r} does not exist here "
                          f"(known: {', '.join(sorted(target.characters))})")


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

