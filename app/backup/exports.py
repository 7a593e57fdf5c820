"""Exports and their import: a small registry of exporters, one per kind of document.

An exporter turns a user's data into a JSON document (`kind`, `format_version`, its items
with their ids) and that document into Markdown, and imports such a document into another
install without duplicates (the ids are kept, an item already present is skipped — whoever
it belongs to). An import checks the whole document before it writes anything: canonical
dates (`clock.read_date`), moments from 1970 to 9998, no empty text or key, only characters
this install knows (`ImportTarget.characters`); a document that fails is refused whole. Each
exporter is a module of this package listed in `app.backup.registry.EXPORTERS`; the CLI
(`novaberg export KIND`, `novaberg import FILE`) and the API (`/api/exports/{kind}`,
`POST /api/imports`) serve whatever is listed there. This module holds what exporters share,
so it imports none of them.

An export is streamed, never built whole: an exporter names its document's lists
(`sections`: a name and the items, read lazily from the database) and writes its Markdown
piece by piece (`markdown`); `stream` turns either into chunks of about `CHUNK_BYTES`, in one
read transaction (one moment of the database). What is not in the database (a chat export's
lists and reminders, kept in Redis) is read before and handed to `stream` as `kept`: lists
after the exporter's own. The API makes each chunk on a reader thread and writes it to the
response as it comes; the CLI writes it to the file. So an export of any size takes memory
of one chunk, and the event loop only passes chunks on. The JSON is one document of the same
shape as `json.dumps(document, ensure_ascii=False, indent=1)` writes: the head's fields, then
each section's list. One file per item (`files`, the journal's) is streamed as a zip
(`stream_zip`), a file on disk among them (an entry's photo) copied into it as it is read.
An import is decoded off the event loop, item by item (`read_document`).

Exporters read and write through a connection of either engine they are given (`Connection`,
`app.storage.connection`): the app passes one of its database's connections (the one writer for
imports), the CLI its own.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import zipfile
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol, TypeVar

import msgspec

from app.core import json_input
from app.core.clock import FIRST_MOMENT, LAST_MOMENT, read_date
from app.core.text import is_blank
from app.storage.connection import Connection
from app.storage.files import open_regular

FORMAT_VERSION = 1
CHUNK_BYTES = 256 * 1024  # what one step of a streamed export makes: a page of rows
ExportFormat = Literal["md", "json"]
S = TypeVar("S", bound=msgspec.Struct)

# A moment in an export document: epoch seconds from 1970 to the end of year 9998 UTC
# (`clock.LAST_MOMENT`). A date and a local time in every zone can be made of every such
# value; a crafted file with another one would break every later view of what it imported
# (Markdown exports, the panels).
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


class Counted(msgspec.Struct, frozen=True):
    """How many items of a part an import added, and skipped as already there."""

    imported: int
    skipped: int


class ImportResult(msgspec.Struct, frozen=True):
    """An import's answer (the API's and the CLI's; field order: its keys): the totals, and
    per part where a document has several (a chat export: messages, lists, reminders)."""

    kind: str
    imported: int
    skipped: int
    parts: dict[str, Counted] | msgspec.UnsetType = msgspec.UNSET


# A list of the JSON document: its name ("messages") and its items (dicts or structs, in the
# document's key order), read as they are needed.
Section = tuple[str, Iterable[object]]


class Exporter(Protocol):
    name: str  # the CLI/API word: "chat", "journal"
    document_kind: str  # the document's "kind": "novaberg.chat"
    also_reads: tuple[str, ...]  # other kinds its import takes (older or narrower exports)

    def sections(self, conn: Connection, query: ExportQuery) -> list[Section]:
        """The document's lists after its head, in order."""
        ...

    def markdown(
        self,
        conn: Connection,
        query: ExportQuery,
        head: dict[str, Any],
        language: str | None = None,
    ) -> Iterator[str]:
        """The document for people, piece by piece (`head`: `document_head`'s fields and
        what `stream` was handed as `kept`); `language` (de, en) for its words where the
        exporter has them in both, None for the exporter's neutral form."""
        ...

    def import_document(
        self, conn: Connection, target: ImportTarget, raw: bytes
    ) -> ImportResult: ...


def check_date(value: str | None, name: str) -> str | None:
    if value in (None, ""):
        return None
    try:
        return read_date(value)
    except ValueError as exc:
        raise ExportError(f"{name} {exc}") from None


def make_query(
    user_id: str,
    character_id: str | None = None,
    start: str | None = None,
    end: str | None = None,
    zone: dt.tzinfo | None = None,
) -> ExportQuery:
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
        # Only the head is read here; `read_document` checks the whole text for U+0000.
        return json_input.decode(raw, _Head, check_nul=False)
    except json_input.JsonInputError as exc:
        raise ExportError(f"not a Novaberg export: {exc}") from None


def read_document(raw: bytes, shape: type[S], noun: str) -> S:
    """The document `raw` as `shape`, decoded item by item (`json_input.decode_pieces`: on a
    worker thread, it leaves the event loop a turn between two items); ExportError (naming
    `noun`) if it is not one."""
    try:
        return json_input.decode_pieces(raw, shape)
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
        raise ExportError(
            f"{where}: character {character_id[:64]!r} does not exist here "
            f"(known: {', '.join(sorted(target.characters))})"
        )


def document_kind(raw: bytes) -> str:
    """The `kind` a JSON export says it is."""
    return read_head(raw).kind


def stream(
    exporter: Exporter,
    conn: Connection,
    query: ExportQuery,
    fmt: ExportFormat,
    language: str | None = None,
    kept: msgspec.Struct | None = None,
) -> Iterator[bytes]:
    """The export as chunks of about `CHUNK_BYTES` (UTF-8), read in one transaction; `kept`:
    the lists read elsewhere before (see the module), a struct whose every field is a list:
    each a section after the exporter's own, and in the Markdown's head by its name."""
    kept_lists: dict[str, Any] = msgspec.structs.asdict(kept) if kept is not None else {}
    conn.execute("BEGIN")  # one moment of the database, however long the export takes
    try:
        head = document_head(exporter.document_kind, query)
        if fmt == "json":
            sections = [*exporter.sections(conn, query), *kept_lists.items()]
            yield from chunked(json_pieces(head, sections))
        else:
            yield from chunked(
                text.encode()
                for text in exporter.markdown(conn, query, {**head, **kept_lists}, language)
            )
    finally:
        conn.rollback()


def stream_zip(
    files: Callable[[Connection], Iterable[tuple[str, str | Path]]],
    conn: Connection,
) -> Iterator[bytes]:
    """A zip of the files `files(conn)` makes, in the order made, in chunks as they are
    written, read in one transaction: a text (name, UTF-8 text) deflated; a file on disk
    (name, its path: a journal entry's photo, already compressed) stored as it is, copied
    piece by piece, never through a link."""
    sink = _Sink()
    conn.execute("BEGIN")
    try:
        with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, body in files(conn):
                if isinstance(body, Path):
                    yield from _stored(archive, name, body, sink)
                else:
                    archive.writestr(name, body.encode())
                if sink.held >= CHUNK_BYTES:
                    yield sink.take()
        yield sink.take()
    finally:
        conn.rollback()


def _stored(archive: zipfile.ZipFile, name: str, path: Path, sink: _Sink) -> Iterator[bytes]:
    """`path`'s bytes into `archive` as `name`, uncompressed, yielding the sink's chunks."""
    with open_regular(path) as source:
        info = zipfile.ZipInfo(name, time.localtime()[:6])
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = os.fstat(source.fileno()).st_size  # tells the zip whether zip64
        with archive.open(info, "w") as target:
            while piece := source.read(CHUNK_BYTES):
                target.write(piece)
                if sink.held >= CHUNK_BYTES:
                    yield sink.take()


class _Sink:
    """A file a zip is written to (not seekable: the zip describes each entry after its
    data), emptied by `take`."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.held = 0
        self.written = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.held += len(data)
        self.written += len(data)
        return len(data)

    def tell(self) -> int:
        return self.written

    def flush(self) -> None:
        pass

    def close(self) -> None:
        """Nothing to release: the parts stay until taken (a zip never closes a file
        object it was given; its protocol asks for the method)."""

    def take(self) -> bytes:
        data, self.parts, self.held = b"".join(self.parts), [], 0
        return data


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
            yield separator + msgspec.json.format(_ENCODE(item), indent=1).replace(b"\n", b"\n  ")
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

    return {
        "kind": kind,
        "format_version": FORMAT_VERSION,
        "app_version": __version__,
        "exported_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "user_id": query.user_id,
        "character_id": query.character_id,
        "from": query.start,
        "to": query.end,
    }


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
