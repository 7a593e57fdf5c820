"""The journal's row-level SQL, run inside a transaction its caller holds (the store's writer,
or an importer's connection): a user's space and day, made on first use; an entry of a user;
appending a version with its source refs; and the rows as the read models of `models` (an
entry's photos, `media_assets`, among them).
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Iterable, Sequence

import msgspec

from app.journal.models import (
    Asset,
    Draft,
    DraftBase,
    DraftSource,
    Entry,
    EntryVersion,
    Job,
    JobError,
    VersionSource,
)
from app.journal.support import Support, VersionSentence
from app.storage.connection import Connection
from app.storage.dialect import held
from app.storage.errors import Conflict, Missing


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def ensure_space(conn: Connection, user_id: str) -> str:
    conn.execute(
        "INSERT INTO journal_spaces (space_id, user_id, created_at) "
        "VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (new_id("space"), user_id, time.time()),
    )
    return conn.execute(
        "SELECT space_id FROM journal_spaces WHERE user_id = ?", (user_id,)
    ).fetchone()[0]


def ensure_day(conn: Connection, user_id: str, date: str) -> str:
    space_id = ensure_space(conn, user_id)
    conn.execute(
        "INSERT INTO journal_days (day_id, space_id, calendar_date, "
        "created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        (new_id("day"), space_id, date, time.time()),
    )
    return conn.execute(
        "SELECT day_id FROM journal_days WHERE space_id = ? AND calendar_date = ?", (space_id, date)
    ).fetchone()[0]


ENTRY_OF_USER = (
    "SELECT e.entry_id, d.calendar_date, e.current_version_id, e.created_at, "
    "e.deleted_at, e.journal_day_id FROM journal_entries e "
    "JOIN journal_days d ON d.day_id = e.journal_day_id "
    "JOIN journal_spaces s ON s.space_id = d.space_id "
    "WHERE s.user_id = ? AND e.entry_id = ?"
)


def entry_row(conn: Connection, user_id: str, entry_id: str, *, hold: bool = False) -> sqlite3.Row:
    """The user's entry. `hold` (a writer's, in its transaction): the entry's row is held
    until the transaction ends (`dialect.held`), so that a writer of the same entry in
    another process waits and then reads the entry as this one left it — whether it is in
    the trash, its current version, the number its next version takes (`append_version`)."""
    row = conn.execute(
        ENTRY_OF_USER + (held(conn, "e") if hold else ""), (user_id, entry_id)
    ).fetchone()
    if row is None:
        raise Missing(f"no journal entry {entry_id!r}")
    return row


def append_version(
    conn: Connection,
    entry_id: str,
    origin: str,
    text: str,
    refs: Iterable[tuple[str, str]],
    draft_id: str | None = None,
    provenance: Sequence[VersionSentence] = (),
) -> str:
    """The entry's next version, made its current one, with its sentences' map
    (`provenance`; `[]` where it is not known where each sentence came from: an import).
    The entry is new in the caller's transaction or held by it (`entry_row(..., hold=True)`):
    then no other writer numbers a version of it until this transaction ends, and `seq` is
    free."""
    version_id = new_id("ver")
    seq = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM journal_entry_versions WHERE entry_id = ?",
        (entry_id,),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO journal_entry_versions (version_id, entry_id, seq, origin, text, "
        "draft_id, created_at, provenance_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            version_id,
            entry_id,
            seq,
            origin,
            text,
            draft_id,
            time.time(),
            msgspec.json.encode(list(provenance)).decode(),
        ),
    )
    conn.executemany(
        "INSERT INTO journal_entry_version_source_refs (version_id, position, "
        "conversation_id, message_id) VALUES (?, ?, ?, ?)",
        [(version_id, i, c, m) for i, (c, m) in enumerate(refs)],
    )
    conn.execute(
        "UPDATE journal_entries SET current_version_id = ? WHERE entry_id = ?",
        (version_id, entry_id),
    )
    return version_id


def stored_map(conn: Connection, version_id: str) -> list[VersionSentence]:
    """A version's sentences' map, as stored (`[]`: none, e.g. from before it was kept)."""
    row = conn.execute(
        "SELECT provenance_json FROM journal_entry_versions WHERE version_id = ?", (version_id,)
    ).fetchone()
    return _VERSION_MAP.decode(row[0]) if row is not None else []


_VERSION_MAP = msgspec.json.Decoder(list[VersionSentence])


def version_refs(conn: Connection, version_id: str) -> list[tuple[str, str]]:
    return [
        (r[0], r[1])
        for r in conn.execute(
            "SELECT conversation_id, message_id FROM journal_entry_version_source_refs "
            "WHERE version_id = ? ORDER BY position",
            (version_id,),
        )
    ]


def draft_refs(conn: Connection, draft_id: str) -> list[sqlite3.Row]:
    return conn.execute(
        "SELECT source_id, conversation_id, message_id, act FROM "
        "journal_draft_source_refs WHERE draft_id = ? ORDER BY position",
        (draft_id,),
    ).fetchall()


def require_live(row: sqlite3.Row) -> None:
    if row["deleted_at"] is not None:
        raise Conflict("entry_deleted", "the entry is in the trash; undelete it first")


def job_of(row: sqlite3.Row) -> Job:
    error = JobError(row["error_code"], row["error_message"]) if row["error_code"] else None
    return Job(row["job_id"], row["calendar_date"], row["state"], row["draft_id"], error)


def draft_of(row: sqlite3.Row, refs: Sequence[sqlite3.Row]) -> Draft:
    return Draft(
        draft_id=row["draft_id"],
        date=row["calendar_date"],
        text=row["text"],
        status=row["status"],
        reconstruction_status=row["reconstruction_status"],
        narration=row["narration"],
        validation=json.loads(row["validation_json"]),
        sources=[
            DraftSource(r["message_id"], r["source_id"], r["conversation_id"], r["act"] or None)
            for r in refs
        ],
        base=DraftBase(row["base_origin"], row["base_id"]) if row["base_origin"] else None,
        trace=json.loads(row["trace_json"]),
        # Each sentence with the lines it drew on; the model's sentences left out (issue 40).
        support=msgspec.json.decode(row["support_json"], type=Support),
        created_at=row["created_at"],
    )


def entry_of(conn: Connection, row: sqlite3.Row) -> Entry:
    versions = [
        EntryVersion(
            version_id=version["version_id"],
            created_at=version["created_at"],
            origin=version["origin"],
            text=version["text"],
            draft_id=version["draft_id"],
            sources=[VersionSource(c, m) for c, m in version_refs(conn, version["version_id"])],
            provenance=_VERSION_MAP.decode(version["provenance_json"]),
        )
        for version in conn.execute(
            "SELECT version_id, created_at, origin, text, draft_id, provenance_json "
            "FROM journal_entry_versions "
            "WHERE entry_id = ? ORDER BY seq",
            (row["entry_id"],),
        ).fetchall()
    ]
    current = next((v for v in versions if v.version_id == row["current_version_id"]), None)
    media = [
        Asset(*r)
        for r in conn.execute(
            "SELECT asset_id, entry_id, name, kind, bytes, width, height, created_at "
            "FROM media_assets WHERE entry_id = ? ORDER BY created_at, asset_id",
            (row["entry_id"],),
        )
    ]
    return Entry(
        entry_id=row["entry_id"],
        date=row["calendar_date"],
        text=current.text if current else "",
        current_version_id=row["current_version_id"],
        created_at=row["created_at"],
        deleted_at=row["deleted_at"],
        versions=versions,
        media=media,
    )
