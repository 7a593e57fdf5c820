"""Exports and their import: a small registry of exporters, one per kind of document.

An exporter turns a user's data into a JSON document (`kind`, `format_version`, its items
with their ids) or into Markdown, and imports such a document into another install without
duplicates (the ids are kept, an item already present is skipped). Each exporter is a module
of this package listed in `app.backup.registry.EXPORTERS`; the CLI (`novaberg export KIND`,
`novaberg import FILE`) and the API (`/api/exports/{kind}`, `POST /api/imports`) serve
whatever is listed there. This module holds what exporters share, so it imports none of them.

An export is streamed, never built whole: an exporter names its document's lists
(`sections`: a name and the items, read lazily from the database) and writes its Markdown
piece by piece (`markdown`); `stream` turns either into chunks of about `CHUNK_BYTES`, in one
read transaction (one moment of the database). The API makes each chunk on a reader thread
and writes it to the response as it comes; the CLI writes it to the file. So an export of
any size takes memory of one chunk, and the event loop only passes chunks on. The JSON is
one document of the same shape as ever: the head's fields, then each section's list.

Exporters read and write through a `sqlite3.Connection` they are given: the app passes one
of its database's connections (the one writer for imports), the CLI its own.
"""

from __future__ import annotations

import datetime as dt
import functools
import sqlite3
import typing
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol, TypeVar

import msgspec

FORMAT_VERSION = 1
CHUNK_BYTES = 256 * 1024  # what one step of a streamed export makes: a page of rows
ExportFormat = Literal["md", "json"]

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


# A list of the JSON document: its name ("messages") and its items, read as they are needed.
Section = tuple[str, Iterable[dict[str, Any]]]


class Exporter(Protocol):
    name: str  # the CLI/API word: "chat", "journal"
    document_kind: str  # the document's "kind": "novaberg.chat"
    also_reads: tuple[str, ...]  # other kinds its import takes (older or narrower exports)

    def sections(self, conn: sqlite3.Connection, query: ExportQuery) -> list[Section]:
        """The document's lists after its head, in order."""
        ...

    def markdown(self, conn: sqlite3.Connection, query: ExportQuery,
                 head: dict[str, Any]) -> Iterator[str]:
        """The Markdown export, piece by piece (`head`: `document_head`'s fields)."""
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


S = TypeVar("S", bound=msgspec.Struct)


def decode_document(raw: bytes, shape: type[S]) -> S:
    """`msgspec.json.decode(raw, type=shape)`, in pieces: one pass over `raw` leaves each of
    the document's lists raw (`msgspec.Raw`, no objects made), then their items are decoded
    one by one. A single decode of tens of megabytes holds the GIL for seconds, and the
    event loop with it, though it runs on a worker thread; between the items the loop runs.
    A wrong item raises `msgspec.ValidationError` with its path, as the single decode does
    (`... - at `$.messages[3].text``)."""
    scan, items = _pieces_of(shape)
    scanned = msgspec.json.decode(raw, type=scan)
    values = {}
    for name in shape.__struct_fields__:
        value = getattr(scanned, name)
        if name in items:
            encode_name, decoder = items[name]
            value = [_item(decoder, piece, f"$.{encode_name}[{n}]")
                     for n, piece in enumerate(value)]
        values[name] = value
    return shape(**values)


@functools.cache
def _pieces_of(shape: type[msgspec.Struct]
               ) -> tuple[type[msgspec.Struct], dict[str, tuple[str, msgspec.json.Decoder]]]:
    """The struct `shape` with its list fields as lists of `msgspec.Raw`, and per list field
    its JSON name and its items' decoder."""
    fields: list[Any] = []
    items = {}
    for info in msgspec.structs.fields(shape):
        kind = info.type
        if typing.get_origin(kind) is list:
            items[info.name] = (info.encode_name, msgspec.json.Decoder(typing.get_args(kind)[0]))
            kind = list[msgspec.Raw]
        if info.default is not msgspec.NODEFAULT:
            fields.append((info.name, kind, info.default))
        elif info.default_factory is not msgspec.NODEFAULT:
            fields.append((info.name, kind, msgspec.field(default_factory=info.default_factory)))
        else:
            fields.append((info.name, kind))
    config = shape.__struct_config__
    renames = {info.name: info.encode_name for info in msgspec.structs.fields(shape)}
    scan = msgspec.defstruct(f"{shape.__name__}Pieces", fields, rename=renames,
                             forbid_unknown_fields=config.forbid_unknown_fields)
    return scan, items


def _item(decoder: msgspec.json.Decoder, piece: msgspec.Raw, path: str) -> Any:
    try:
        return decoder.decode(piece)
    except msgspec.ValidationError as exc:
        message = str(exc)
        if " - at `$" in message:
            raise msgspec.ValidationError(message.replace(" - at `$", f" - at `{path}", 1)
                                          ) from None
        raise msgspec.ValidationError(f"{message} - at `{path}`") from None


def document_kind(raw: bytes) -> str:
    """The `kind` a JSON export says it is."""
    return read_head(raw).kind


def stream(exporter: Exporter, conn: sqlite3.Connection, query: ExportQuery,
           fmt: ExportFormat) -> Iterator[bytes]:
    """The export as chunks of about `CHUNK_BYTES` (UTF-8), read in one transaction."""
    conn.execute("BEGIN")  # one moment of the database, however long the export takes
    try:
        head = document_head(exporter.document_kind, query)
        if fmt == "json":
            yield from chunked(json_pieces(head, exporter.sections(conn, query)))
        else:
            yield from chunked(text.encode() for text in exporter.markdown(conn, query, head))
    finally:
        conn.rollback()


def json_pieces(head: dict[str, Any], sections: list[Section]) -> Iterator[bytes]:
    """One JSON document (indented by one, like `json.dumps(indent=1)`): the head's fields,
    then each section's list, item by item."""
    opening = _ENCODE(head)
    yield msgspec.json.format(opening, indent=1)[:-2] if len(opening) > 2 else b"{\n"
    for n, (name, items) in enumerate(sections):
        comma = b",\n" if len(opening) > 2 or n else b""
        yield comma + b" " + _ENCODE(name) + b": ["
        separator = b"\n  "
        for item in items:
            yield separator + msgspec.json.format(_ENCODE(item), indent=1).replace(b"\n",
                                                                                   b"\n  ")
            separator = b",\n  "
        yield b"]" if separator == b"\n  " else b"\n ]"
    yield b"\n}"


_ENCODE = msgspec.json.Encoder().encode


def chunked(pieces: Iterable[bytes], size: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The pieces joined into chunks of at least `size` bytes (the last may be smaller)."""
    parts: list[bytes] = []
    held = 0
    for piece in pieces:
        parts.append(piece)
        held += len(piece)
        if held >= size:
            yield b"".join(parts)
            parts, held = [], 0
    if parts:
        yield b"".join(parts)


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

