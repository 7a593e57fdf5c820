"""Long-term memory (the seeds' LZG; design §3a): what the character knows about its user
across days, in SQLite (table `memories`, FTS5 index `memories_fts`, migration
`m005_memories`).

- **Writes** go through the database's one writer. The Pixie worker's consolidation of one
  promotion trigger is one transaction (`apply`): its new, refreshed and superseded memories
  and the record that the trigger is done — a trigger consolidated again after a crash
  changes nothing.
- **Retrieval** (`relevant`): the ranking lives in `app.memory.recall` (FTS5 over the
  block's words, IDF × importance × recency, bounded work); `within_budget` then keeps whole
  memories in rank order up to `memory_budget_chars` (never a cut text).
- **The user is in charge**: list/search, edit, forget one, forget all. Forgetting is real:
  the row goes, the FTS index is merged so no segment keeps the old terms, the writer runs
  with `secure_delete` (freed pages are zeroed) and the WAL is checkpointed, so the text is
  gone from the database files.

Memories of one pair never reach another pair: every query names user and character.

One module: one store; its writes, its one transaction per trigger and its reads share the
table's rules (the ranking is `recall`'s).
"""

from __future__ import annotations

import builtins  # the class's method `list` hides the builtin in its body's annotations
import json
import logging
import re
import sqlite3
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from app.core.clock import calendar_date
from app.core.log import fields
from app.memory.recall import (
    CANDIDATE_POOL,
    MEMORIES_FTS,
    TERM_POOL,
    lookup_terms,
    pair_range,
    ranked_ids,
)
from app.memory.views import MemoryView
from app.memory.words import query_terms
from app.storage import dialect
from app.storage.connection import Connection
from app.storage.database import Database
from app.storage.migrations import memory_text_key

log = logging.getLogger(__name__)

KINDS: tuple[str, ...] = ("fact", "person", "preference", "event", "plan", "feeling")
DEFAULT_KIND = "fact"
# The one rule for a memory's id: what `uuid4().hex` makes here, what the routes take, what an
# import must carry (an id of any other shape could be stored but never named by a route).
MEMORY_ID = re.compile(r"[0-9a-f]{32}")

_COLUMNS = (
    "memory_id, user_id, character_id, text, kind, importance, created_at, "
    "refreshed_at, last_used_at, reflected_at, source_message_ids, superseded_by"
)
_COLUMNS_M = ", ".join(f"m.{c.strip()}" for c in _COLUMNS.split(","))


@dataclass(frozen=True, slots=True)
class Memory:
    memory_id: str
    user_id: str
    character_id: str
    text: str
    kind: str
    importance: float
    created_at: float
    refreshed_at: float
    last_used_at: float | None
    reflected_at: float | None
    source_message_ids: list[str]
    superseded_by: str | None

    @property
    def live(self) -> bool:
        return self.superseded_by is None

    def view(self) -> MemoryView:
        """The memory as its owner sees it (design §9)."""
        return MemoryView(
            memory_id=self.memory_id,
            text=self.text,
            kind=self.kind,
            importance=self.importance,
            created_at=self.created_at,
            last_used_at=self.last_used_at,
            source_message_ids=list(self.source_message_ids),
            superseded_by=self.superseded_by,
        )


@dataclass(frozen=True, slots=True)
class Change:
    """One consolidation outcome, checked: a new memory (`remember`), the same fact again
    (`refresh` of `memory_id`), or a correction (`supersede` of `memory_id`)."""

    action: Literal["remember", "refresh", "supersede"]
    text: str = ""
    kind: str = DEFAULT_KIND
    importance: float = 0.5
    memory_id: str = ""


@dataclass(slots=True)
class Applied:
    """What `apply` did, per change: the memory written or refreshed."""

    added: list[str] = field(default_factory=list)
    refreshed: list[str] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)  # (old, new)


def _row(row: sqlite3.Row | Sequence[Any]) -> Memory:
    return Memory(
        memory_id=row[0],
        user_id=row[1],
        character_id=row[2],
        text=row[3],
        kind=row[4],
        importance=row[5],
        created_at=row[6],
        refreshed_at=row[7],
        last_used_at=row[8],
        reflected_at=row[9],
        source_message_ids=json.loads(row[10] or "[]"),
        superseded_by=row[11],
    )


def normalized(text: str) -> str:
    """Text as duplicates compare (stored as `text_key`)."""
    return memory_text_key(text)


def memory_line(memory: Memory, zone: Any) -> str:
    """How one memory stands in a prompt: its date (the user's calendar day), its text."""
    return f"- ({calendar_date(memory.created_at, zone)}) {memory.text}"


def within_budget(memories: Sequence[Memory], zone: Any, budget_chars: int) -> list[Memory]:
    """Whole memories in rank order while their lines fit `budget_chars`; one that does not
    fit is left out whole (a later, shorter one may still fit)."""
    kept, used = [], 0
    for memory in memories:
        size = len(memory_line(memory, zone)) + 1
        if used + size > budget_chars:
            continue
        kept.append(memory)
        used += size
    if len(kept) < len(memories):
        log.warning(
            "memory_budget_chars left memories out",
            extra=fields(
                limit="memory_budget_chars",
                budget_chars=budget_chars,
                kept=len(kept),
                left_out=[m.memory_id for m in memories if m not in kept],
            ),
        )
    return kept


class LongTermMemory:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- consolidation ---------------------------------------------------------------------

    async def apply(
        self,
        trigger_id: str,
        user_id: str,
        character_id: str,
        changes: Sequence[Change],
        source_message_ids: Sequence[str],
        now: float,
    ) -> Applied | None:
        """Apply one trigger's checked changes in one transaction; None when the trigger
        was consolidated before (a rerun after a crash)."""
        sources = list(source_message_ids)

        def write(conn: sqlite3.Connection) -> Applied | None:
            done = conn.execute(
                "INSERT INTO memory_triggers (trigger_id, user_id, character_id, "
                "consolidated_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (trigger_id, user_id, character_id, now),
            )
            if done.rowcount == 0:
                return None
            applied = Applied()
            for change in changes:
                _apply_one(conn, applied, user_id, character_id, change, sources, now)
            return applied

        return await self.db.execute_write_fn(write)

    async def candidates(
        self, user_id: str, character_id: str, text: str, limit: int
    ) -> list[Memory]:
        """Live memories of the pair related to `text`, best first (what consolidation may
        refresh or supersede)."""
        return await self.relevant(
            user_id, character_id, text, top_k=limit, now=time.time(), pool=CANDIDATE_POOL
        )

    # --- retrieval -------------------------------------------------------------------------

    async def relevant(
        self,
        user_id: str,
        character_id: str,
        text: str,
        *,
        top_k: int,
        now: float,
        pool: int = TERM_POOL,
    ) -> list[Memory]:
        """The `top_k` live memories most relevant to `text` (IDF × importance × recency;
        `pool`: the newest matches read per word)."""
        terms = lookup_terms(text)
        if top_k <= 0 or not terms:
            return []

        def read(conn: sqlite3.Connection) -> list[Memory]:
            return _ranked(conn, user_id, character_id, terms, top_k, now, pool)

        return await self.db.execute_fn(read)

    async def touch(self, used: Mapping[str, float]) -> None:
        """Set `last_used_at` of memories a prompt used (memory id → when)."""
        if not used:
            return
        rows = [(at, memory_id) for memory_id, at in used.items()]

        def write(conn: sqlite3.Connection) -> None:
            latest = dialect.greatest(conn, "coalesce(last_used_at, 0)", "?")
            conn.executemany(
                f"UPDATE memories SET last_used_at = {latest} WHERE memory_id = ?", rows
            )

        await self.db.execute_write_fn(write)

    # --- the user's view -------------------------------------------------------------------

    async def list(
        self, user_id: str, character_id: str, *, query: str = "", include_superseded: bool = False
    ) -> builtins.list[Memory]:
        """The pair's memories, newest first; `query` searches them (the text index). A query without a
        term the index can look up (shorter than three letters, or only stopwords: "Jo",
        "mag") is matched as a substring of the pair's memories instead, so the search box
        never answers nothing for a word that is there."""
        live = "" if include_superseded else " AND m.superseded_by IS NULL"
        terms = query_terms(query) if query.strip() else []
        if query.strip() and not terms:
            needle = query.strip().casefold()
            every = await self.list(user_id, character_id, include_superseded=include_superseded)
            return [memory for memory in every if needle in memory.text.casefold()]

        def read(conn: sqlite3.Connection) -> list[Memory]:
            found, params = "", ()
            if terms:
                found, params = dialect.contains_any(conn, MEMORIES_FTS, "m.text", terms)
                found = f" AND {found}"
            return [
                _row(row)
                for row in conn.execute(
                    f"SELECT {_COLUMNS_M} FROM memories m WHERE m.user_id = ? "
                    f"AND m.character_id = ?{live}{found} ORDER BY m.created_at DESC, m.id",
                    (user_id, character_id, *params),
                )
            ]

        # A search runs on the search lane: the ordinary reads never wait behind searches.
        run = self.db.execute_search_fn if terms else self.db.execute_fn
        return await run(read)

    async def get(self, user_id: str, character_id: str, memory_id: str) -> Memory | None:
        def read(conn: sqlite3.Connection) -> Memory | None:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM memories WHERE memory_id = ? "
                "AND user_id = ? AND character_id = ?",
                (memory_id, user_id, character_id),
            ).fetchone()
            return _row(row) if row is not None else None

        return await self.db.execute_fn(read)

    async def edit(
        self, user_id: str, character_id: str, memory_id: str, text: str
    ) -> Memory | None:
        """Replace a memory's text (the user corrects it); None when it does not exist. The
        old text leaves the index and, with `secure_delete`, the file."""

        def write(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "UPDATE memories SET text = ?, text_key = ? "
                "WHERE memory_id = ? AND user_id = ? AND character_id = ?",
                (text, normalized(text), memory_id, user_id, character_id),
            )
            if cursor.rowcount:
                _merge_index(conn)
            return cursor.rowcount == 1

        if not await self.db.execute_write_fn(write):
            return None
        await self._checkpoint()
        return await self.get(user_id, character_id, memory_id)

    async def forget(self, user_id: str, character_id: str, memory_id: str) -> bool:
        """Delete one memory for real; a memory it had superseded becomes live again only if
        the user edits it — it stays marked, pointing at nothing. False when unknown."""

        def write(conn: sqlite3.Connection) -> int:
            return _delete(
                conn,
                "memory_id = ? AND user_id = ? AND character_id = ?",
                (memory_id, user_id, character_id),
            )

        deleted = await self.db.execute_write_fn(write)
        if deleted:
            await self._checkpoint()
        return bool(deleted)

    async def forget_all(self, user_id: str, character_id: str) -> int:
        """ "Alles vergessen": every memory of the pair, for real; the number deleted."""

        def write(conn: sqlite3.Connection) -> int:
            conn.execute(
                "DELETE FROM memory_triggers WHERE user_id = ? AND character_id = ?",
                (user_id, character_id),
            )
            return _delete(conn, "user_id = ? AND character_id = ?", (user_id, character_id))

        deleted = await self.db.execute_write_fn(write)
        await self._checkpoint()
        return deleted

    async def _checkpoint(self) -> None:
        """Move the WAL into the main file and truncate it: the deleted text lived on in the
        WAL's page images until then."""

        def run(conn: sqlite3.Connection) -> tuple[int, int, int]:
            if dialect.is_postgres(conn):
                return (0, 0, 0)  # no WAL file of ours; the server's VACUUM reclaims the rows
            return tuple(conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())

        busy, _, _ = await self.db.execute_write_fn(run)
        if busy:
            log.warning(
                "WAL checkpoint after forgetting was blocked by a reader; the next "
                "checkpoint completes it"
            )

    # --- reflection ------------------------------------------------------------------------

    async def to_reflect_on(
        self, user_id: str, character_id: str, *, before: float, limit: int = 20
    ) -> builtins.list[Memory]:
        """Live plans and feelings told before `before` that the character has not yet come
        back to, newest first (reflection impulses, design §3a)."""

        def read(conn: sqlite3.Connection) -> list[Memory]:
            return [
                _row(row)
                for row in conn.execute(
                    f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? AND character_id = ? "
                    "AND superseded_by IS NULL AND reflected_at IS NULL "
                    "AND kind IN ('plan', 'feeling') AND created_at < ? "
                    "ORDER BY created_at DESC LIMIT ?",
                    (user_id, character_id, before, limit),
                )
            ]

        return await self.db.execute_fn(read)

    async def mark_reflected(self, memory_id: str, now: float) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE memories SET reflected_at = ? WHERE memory_id = ?", (now, memory_id)
            )

        await self.db.execute_write_fn(write)


def _apply_one(
    conn: sqlite3.Connection,
    applied: Applied,
    user_id: str,
    character_id: str,
    change: Change,
    sources: list[str],
    now: float,
) -> None:
    target = (
        _live_by_id(conn, user_id, character_id, change.memory_id) if change.memory_id else None
    )
    if (change.action == "refresh" and target is None) or change.action == "remember":
        target = _live_same_text(conn, user_id, character_id, change.text)
        if target is not None:  # the same fact again: refresh it, no duplicate
            change = Change(
                "refresh", change.text, change.kind, change.importance, target.memory_id
            )
    if (
        change.action == "supersede"
        and target is not None
        and normalized(target.text) == normalized(change.text)
    ):
        change = Change("refresh", change.text, change.kind, change.importance, target.memory_id)
    if change.action == "refresh" and target is not None:
        merged = list(dict.fromkeys([*target.source_message_ids, *sources]))
        conn.execute(
            "UPDATE memories SET refreshed_at = ?, importance = "
            f"{dialect.greatest(conn, 'importance', '?')}, "
            "source_message_ids = ? WHERE memory_id = ?",
            (now, change.importance, json.dumps(merged), target.memory_id),
        )
        applied.refreshed.append(target.memory_id)
        return
    new_id = uuid.uuid4().hex
    insert_memory(
        conn,
        {
            "memory_id": new_id,
            "user_id": user_id,
            "character_id": character_id,
            "text": change.text,
            "kind": change.kind,
            "importance": change.importance,
            "created_at": now,
            "refreshed_at": now,
            "source_message_ids": json.dumps(sources),
        },
    )
    if change.action == "supersede" and target is not None:
        conn.execute(
            "UPDATE memories SET superseded_by = ? WHERE memory_id = ?", (new_id, target.memory_id)
        )
        applied.superseded.append((target.memory_id, new_id))
    applied.added.append(new_id)


def insert_memory(conn: Connection, row: Mapping[str, Any]) -> bool:
    """Write one memory (columns of `memories` by name, `memory_id`, `user_id` and
    `character_id` among them) with the next row id of its pair — one below the pair's
    newest, so within a pair a newer memory has a smaller id (migration
    `m007_memories_by_pair`); False when its `memory_id` is there already. The one way a
    memory is added: consolidation, imports and the bench.

    Processes on one PostgreSQL add memories at once (two imports of one export): the pair's
    row is held until the transaction ends, so the next row id is read only once the other
    writer of the pair has committed; a `memory_id` another writer added meanwhile (to any
    pair) is skipped as one that was there before."""
    if conn.execute("SELECT 1 FROM memories WHERE memory_id = ?", (row["memory_id"],)).fetchone():
        return False
    pair = pair_range(conn, row["user_id"], row["character_id"], hold=True)
    if pair is None:  # a new pair: numbered here (no number is spent on an existing one)
        conn.execute(
            "INSERT INTO memory_pairs (user_id, character_id) VALUES (?, ?) "
            "ON CONFLICT (user_id, character_id) DO NOTHING",  # another process numbered it
            (row["user_id"], row["character_id"]),
        )
        pair = pair_range(conn, row["user_id"], row["character_id"], hold=True)
    first, last = pair or (0, 0)
    newest = conn.execute(
        "SELECT min(id) FROM memories WHERE id BETWEEN ? AND ?", (first, last)
    ).fetchone()[0]
    names = ["id", "text_key", *row]
    added = conn.execute(
        f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join('?' * len(names))}) "
        "ON CONFLICT (memory_id) DO NOTHING",
        (last if newest is None else newest - 1, normalized(row["text"]), *row.values()),
    ).rowcount
    return bool(added)


def _ranked(
    conn: sqlite3.Connection,
    user_id: str,
    character_id: str,
    terms: Sequence[str],
    top_k: int,
    now: float,
    pool: int = TERM_POOL,
) -> list[Memory]:
    """The memories `recall.ranked_ids` names, in its order."""
    best = ranked_ids(conn, user_id, character_id, terms, top_k, now, pool)
    if not best:
        return []
    found = {
        row[12]: _row(row)
        for row in conn.execute(
            f"SELECT {_COLUMNS}, id FROM memories WHERE id IN ({','.join('?' * len(best))})", best
        )
    }
    return [found[rowid] for rowid in best if rowid in found]


def _live_by_id(
    conn: sqlite3.Connection, user_id: str, character_id: str, memory_id: str
) -> Memory | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE memory_id = ? AND user_id = ? "
        "AND character_id = ? AND superseded_by IS NULL",
        (memory_id, user_id, character_id),
    ).fetchone()
    return _row(row) if row is not None else None


def _live_same_text(
    conn: sqlite3.Connection, user_id: str, character_id: str, text: str
) -> Memory | None:
    """A live memory of the pair with the same text (`normalized`), by its `text_key`."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE user_id = ? "
        "AND character_id = ? AND text_key = ? AND superseded_by IS NULL "
        "ORDER BY id LIMIT 1",
        (user_id, character_id, normalized(text)),
    ).fetchone()
    return _row(row) if row is not None else None


def _delete(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> int:
    cursor = conn.execute(f"DELETE FROM memories WHERE {where}", params)
    if cursor.rowcount:
        _merge_index(conn)
    return cursor.rowcount


def _merge_index(conn: sqlite3.Connection) -> None:
    """Rewrite the FTS index into one segment: a deleted entry's terms otherwise live on in
    older segments until an automatic merge reaches them. (PostgreSQL's GIN index drops a
    deleted row's entries at its VACUUM.)"""
    if not dialect.is_postgres(conn):
        conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
