"""Which long-term memories are relevant to a text (design §3a, retrieval): the ranking behind
`LongTermMemory.relevant`, on a connection the store hands in.

The block's words are searched in the pair's FTS5 index (trigram tokenizer, see migration
`m005_memories`), live memories only, ranked by a BM25-style relevance — each matching word
weighs by its inverse document frequency, so a rare word ("Jana") counts far more than a
common one — times importance and recency.

The work is bounded whatever the number of memories: at most `MAX_TERMS` words (the longest)
are looked up, and per word the index yields its newest `TERM_POOL` matches of the pair: the
pair's memories own a range of row ids, numbered downward as they are written (migration
`m007_memories_by_pair`), so the index is walked forward from the start of that range, newest
first, and the walk stops at the pool's size: other pairs' memories cost nothing. The document frequency is counted within that pool. FTS5's own
`bm25()` would instead count every match of every word in the whole index before it scores
one (measured at 10 000 memories: 6–17 ms for one common word, 14 ms for a block's words
with the walk limited to 300 rows, against about 1 ms for the pooled walk).

This module knows rows by their integer id only; the store reads the memories themselves.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
from collections.abc import Sequence

from app.memory.words import query_terms
from app.storage import dialect
from app.storage.connection import Connection
from app.storage.migrations import PAIR_ROWS

MAX_TERMS = 12  # words of a block looked up, the longest first
TERM_POOL = 100  # newest matches read per word
# Consolidation shows the model only `memory_candidates` (8) memories, the ones it may refresh
# or correct; they are found by the block's rarer words (a name, a place), so half the pool
# finds them too, and the lookup stays within its share of the 5 ms consolidation budget.
CANDIDATE_POOL = 50
RECENCY_HALF_LIFE_DAYS = 30.0
DAY = 86400.0
_DECAY_PER_DAY = math.log(2) / RECENCY_HALF_LIFE_DAYS


# SQLite's FTS5 index of `memories` (migration m005), as `dialect.contains_*` name it.
MEMORIES_FTS = ("memories_fts", "rowid", "m.id")


def lookup_terms(text: str) -> list[str]:
    """At most `MAX_TERMS` query terms of `text`, the longest (most telling) first."""
    return sorted(query_terms(text), key=len, reverse=True)[:MAX_TERMS]


def weight(importance: float, refreshed_at: float, now: float) -> float:
    """What a memory's relevance is multiplied by: importance and recency. A memory loses at
    most half its weight with age (half-life `RECENCY_HALF_LIFE_DAYS`), so an old memory
    that matches the block well still beats a new one that barely matches."""
    age_days = max(0.0, now - refreshed_at) / DAY
    return (0.5 + importance) * (0.5 + 0.5 * math.exp(-age_days * _DECAY_PER_DAY))


def score(relevance: float, importance: float, refreshed_at: float, now: float) -> float:
    """Relevance (summed IDF of the matching words) times the memory's `weight`."""
    return relevance * weight(importance, refreshed_at, now)


def pair_range(
    conn: Connection, user_id: str, character_id: str, *, hold: bool = False
) -> tuple[int, int] | None:
    """The row ids the pair's memories own (first, last), or None: it has none. `hold` (a
    writer's, in its transaction): the pair's row is held until the transaction ends
    (`dialect.held`), so a writer of the pair in another process waits for it before it
    numbers a memory."""
    row = conn.execute(
        "SELECT pair_no FROM memory_pairs WHERE user_id = ? AND character_id = ?"
        + (dialect.held(conn, "memory_pairs") if hold else ""),
        (user_id, character_id),
    ).fetchone()
    return None if row is None else (row[0] * PAIR_ROWS, (row[0] + 1) * PAIR_ROWS - 1)


def ranked_ids(
    conn: sqlite3.Connection,
    user_id: str,
    character_id: str,
    terms: Sequence[str],
    top_k: int,
    now: float,
    pool: int = TERM_POOL,
) -> list[int]:
    """The row ids of the pair's `top_k` live memories most relevant to `terms`, best first
    (on a reader's connection, or the writer's inside its transaction)."""
    rows_of_pair = pair_range(conn, user_id, character_id)
    if rows_of_pair is None:
        return []
    relevance: dict[int, float] = {}
    weights: dict[int, float] = {}  # id → weight, computed once per memory
    for term in terms:
        # The index first (CROSS JOIN keeps SQLite from looking the word up once per row of
        # the pair), only the pair's row ids, newest first — the smallest ids, so FTS5 walks
        # its doclists forward (twice as fast as backward) — and stop at the pool's size.
        rows = conn.execute(*_term_matches(conn, term, rows_of_pair, pool)).fetchall()
        idf = math.log(1.0 + pool / len(rows)) if rows else 0.0
        for rowid, importance, refreshed_at in rows:
            if rowid in relevance:
                relevance[rowid] += idf
            else:
                relevance[rowid] = idf
                weights[rowid] = weight(importance, refreshed_at, now)
    return heapq.nlargest(top_k, relevance, key=lambda rowid: relevance[rowid] * weights[rowid])


def _term_matches(
    conn: sqlite3.Connection, term: str, rows_of_pair: tuple[int, int], pool: int
) -> tuple[str, tuple[object, ...]]:
    """The query for the pair's newest `pool` live memories that contain `term`."""
    if dialect.is_postgres(conn):
        # The pair's id range walked in the primary key's order (newest first), each row's
        # text checked; pg_trgm's index would first collect every pair's matches.
        found, params = dialect.contains_any(conn, MEMORIES_FTS, "m.text", [term])
        return (
            "SELECT m.id, m.importance, m.refreshed_at FROM memories m "
            f"WHERE m.id BETWEEN ? AND ? AND m.superseded_by IS NULL AND {found} "
            "ORDER BY m.id LIMIT ?",
            (*rows_of_pair, *params, pool),
        )
    return (
        "SELECT f.rowid, m.importance, m.refreshed_at FROM memories_fts f "
        "CROSS JOIN memories m ON m.id = f.rowid WHERE memories_fts MATCH ? "
        "AND f.rowid BETWEEN ? AND ? AND m.superseded_by IS NULL "
        "ORDER BY f.rowid LIMIT ?",
        (dialect.fts_phrase(term), *rows_of_pair, pool),
    )
