"""The chat page's history (design §5 "The chat page"): a pair's durable message log with the
user's imported conversations beside it, paged by a cursor and searched.

The session in Redis is the character's working memory and may expire; this is what was said,
kept. Two sources, one order:

- the message log (`messages`, one row per stored turn text; source `chat`, or `export` for
  a row that came in through a chat export's import, `messages.imported_at`);
- the journal's imported conversations (`journal_messages` of a conversation of source
  `import`): they belong to no character, so every character's history shows them. An
  imported line without a time of its own (`at` null) sorts at noon (UTC) of its day, in
  its order: every line's `sort_at` is where it stands.

The order is (calendar day, time, source, row): the day the line was recorded on first, so
the page's day dividers never interleave. A cursor is that key of one row, opaque to the
client. A page reads at most `limit` + 1 rows per source, whatever the size of the log
(index `messages_by_pair`, migration `m008_message_history`).

Search is FTS5 over both (trigram, like the memories' index): every term of the query must
occur ("Leipzig" finds "Leipziger"); the terms are quoted, so FTS5's syntax characters in a
query are plain text. A query without such a term (only stopwords, only punctuation) is
looked up as it stands, one phrase: a substring. One shorter than three characters, which
the trigram index cannot look up, is matched as a substring of the pair's texts, newest
first, reading rows until the page is full — or refused (`ScanTooLong`) past its budget of rows.

One module: the two sources' queries and their one merged order, which every read (a page,
a search, its scan budget) shares.
"""

from __future__ import annotations

import base64
import heapq
import itertools
import json
import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from app.core.refusal import RefusedKind
from app.memory.recall import MAX_TERMS, lookup_terms
from app.memory.views import LineView
from app.storage import dialect

SOURCE_CHAT = "chat"  # said here
SOURCE_EXPORT = "export"  # a chat export's row, imported
SOURCE_IMPORT = "import"  # a line of a conversation imported into the journal
_RANK_LOG, _RANK_IMPORT = 0, 1
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class InvalidCursor(RefusedKind, ValueError):
    """A cursor this module did not make (400 `invalid_cursor`)."""

    STATUS, CODE = 400, "invalid_cursor"


@dataclass(frozen=True, slots=True, order=True)
class Key:
    """A row's place in the history: (calendar day, time, source rank, row)."""

    date: str
    at: float
    rank: int
    row: int

    def cursor(self) -> str:
        raw = json.dumps([self.date, self.at, self.rank, self.row], separators=(",", ":"))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def parse_cursor(cursor: str, name: str = "cursor") -> Key:
    """The key a cursor names; `InvalidCursor` (naming the cursor `name`) for anything
    `Key.cursor` did not write."""
    refused = InvalidCursor(f"{name} is not a cursor this server gave")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        date, at, rank, row = json.loads(raw)
    except (ValueError, TypeError):
        raise refused from None
    if not (
        isinstance(date, str)
        and _DATE.fullmatch(date)
        and isinstance(at, int | float)
        and not isinstance(at, bool)
        and rank in (_RANK_LOG, _RANK_IMPORT)
        and isinstance(row, int)
        and not isinstance(row, bool)
    ):
        raise refused
    return Key(date, float(at), rank, row)


@dataclass(frozen=True, slots=True)
class Line:
    key: Key
    source: str
    role: str
    text: str
    at: float | None
    turn_id: str | None = None
    message_ids: tuple[str, ...] = ()
    occasion: str = ""  # the turn's `herkunft`
    character_id: str | None = None
    conversation_id: str | None = None
    message_id: str | None = None

    def view(self) -> LineView:
        """The line as the chat page shows it (its cursor, its place in the order)."""
        return LineView(
            cursor=self.key.cursor(),
            source=self.source,
            role=self.role,
            text=self.text,
            at=self.at,
            sort_at=self.key.at,
            calendar_date=self.key.date,
            turn_id=self.turn_id,
            message_ids=list(self.message_ids),
            origin=self.occasion,
            character_id=self.character_id,
            conversation_id=self.conversation_id,
            message_id=self.message_id,
        )


@dataclass(frozen=True, slots=True)
class Page:
    lines: list[Line]  # oldest first
    older: str | None  # cursor for the page before, None: nothing older
    newer: str | None  # cursor for the page after, None: nothing newer


# --- reading one source in order -------------------------------------------------------------

_LOG_COLUMNS = (
    "SELECT id, turn_id, message_ids, role, origin, text, created, calendar_date, "
    "imported_at FROM messages WHERE user_id = ? AND character_id = ?"
)
_LOG_SCAN = "SELECT id, text FROM messages WHERE user_id = ? AND character_id = ?"


def _import_at(conn: sqlite3.Connection) -> str:
    """An imported line's time: its own, or noon of its day plus a millisecond per position."""
    return (
        f"coalesce(m.at, {dialect.day_seconds(conn, 'd.calendar_date')} + 43200 "
        "+ m.position * 0.001)"
    )


def _import_columns(conn: sqlite3.Connection) -> str:
    return (
        "SELECT m.rowid, m.message_id, m.role, m.text, m.at, d.calendar_date, "
        f"c.conversation_id, {_import_at(conn)} FROM journal_messages m "
        "JOIN journal_conversations c ON c.conversation_id = m.conversation_id "
        "JOIN journal_days d ON d.day_id = c.journal_day_id "
        "JOIN journal_spaces s ON s.space_id = d.space_id "
        "WHERE s.user_id = ? AND c.source = 'import'"
    )


def _bound(
    columns: tuple[str, str, str], rank: int, key: Key | None, op: str
) -> tuple[str, tuple[Any, ...]]:
    """The SQL condition "row key `op` `key`" for a source of `rank` (op `<`, `>` or `>=`).
    Rows of the other source never tie with the key: its rank decides at equal day and time."""
    if key is None:
        return "", ()
    day, at, row = columns
    if key.rank == rank:
        return f" AND ({day}, {at}, {row}) {op} (?, ?, ?)", (key.date, key.at, key.row)
    below = rank < key.rank
    pair_op = {
        "<": "<=" if below else "<",
        ">": ">" if below else ">=",
        ">=": ">" if below else ">=",
    }[op]
    return f" AND ({day}, {at}) {pair_op} (?, ?)", (key.date, key.at)


def _log_line(row: sqlite3.Row | tuple[Any, ...]) -> Line:
    return Line(
        key=Key(row[7], row[6], _RANK_LOG, row[0]),
        source=SOURCE_EXPORT if row[8] is not None else SOURCE_CHAT,
        role=row[3],
        text=row[5],
        at=row[6],
        turn_id=row[1],
        message_ids=tuple(json.loads(row[2])),
        occasion=row[4],
    )


def _import_line(row: sqlite3.Row | tuple[Any, ...]) -> Line:
    return Line(
        key=Key(row[5], row[7], _RANK_IMPORT, row[0]),
        source=SOURCE_IMPORT,
        role=row[2],
        text=row[3],
        at=row[4],
        conversation_id=row[6],
        message_id=row[1],
    )


class ScanTooLong(RefusedKind):
    """A substring search would read more rows than its budget; the message says what to do."""

    STATUS, CODE = 422, "search_too_broad"


def _containing(
    rows: Iterator[tuple[Any, ...]], needle: str, column: int, budget: int | None = None
) -> Iterator[Any]:
    """The rows whose text (at `column`) contains `needle`, casefolded; all when it is "".
    With `budget`, `ScanTooLong` once more than that many rows were read."""
    if not needle:
        return rows
    if budget is not None:
        rows = _within(rows, budget)
    return (row for row in rows if needle in row[column].casefold())


def _within(rows: Iterator[tuple[Any, ...]], budget: int) -> Iterator[tuple[Any, ...]]:
    for count, row in enumerate(rows, 1):
        if count > budget:
            raise ScanTooLong(
                f"a search of fewer than {TRIGRAM} letters reads every line, and this history "
                f"has more than {budget} (setting search_scan_rows): search for a longer text"
            )
        yield row


# SQLite's FTS5 indexes of the two sources (migration m008), as `dialect.contains_all` names them.
_LOG_FTS = ("messages_fts", "rowid", "id")
_IMPORT_FTS = ("journal_messages_fts", "message_id", "m.message_id")


def _log_rows(
    conn: sqlite3.Connection,
    user_id: str,
    character_id: str,
    key: Key | None,
    op: str,
    newest_first: bool,
    *,
    match: Sequence[str] = (),
    needle: str = "",
    limit: int | None = None,
    budget: int | None = None,
) -> Iterator[Line]:
    where, params = _bound(("calendar_date", "created", "id"), _RANK_LOG, key, op)
    if match:
        found, found_params = dialect.contains_all(conn, _LOG_FTS, "text", list(match))
        where += f" AND {found}"
        params += found_params
    order = " DESC" if newest_first else ""
    sql = f"{_LOG_COLUMNS}{where} ORDER BY calendar_date{order}, created{order}, id{order}" + (
        " LIMIT ?" if limit is not None else ""
    )
    args = (user_id, character_id, *params) + ((limit,) if limit is not None else ())
    if not needle:
        return map(_log_line, conn.execute(sql, args))
    # The substring path reads every row of the pair: only id and text, the rest for a match.
    scan = conn.execute(sql.replace(_LOG_COLUMNS, _LOG_SCAN, 1), args)
    return (
        _log_line(
            conn.execute(f"{_LOG_COLUMNS} AND id = ?", (user_id, character_id, row[0])).fetchone()
        )
        for row in _containing(scan, needle, 1, budget)
    )


def _import_rows(
    conn: sqlite3.Connection,
    user_id: str,
    key: Key | None,
    op: str,
    newest_first: bool,
    *,
    match: Sequence[str] = (),
    needle: str = "",
    limit: int | None = None,
    budget: int | None = None,
) -> Iterator[Line]:
    at = _import_at(conn)
    where, params = _bound(("d.calendar_date", at, "m.rowid"), _RANK_IMPORT, key, op)
    if match:
        found, found_params = dialect.contains_all(conn, _IMPORT_FTS, "m.text", list(match))
        where += f" AND {found}"
        params += found_params
    order = " DESC" if newest_first else ""
    sql = (
        f"{_import_columns(conn)}{where} ORDER BY d.calendar_date{order}, {at}{order}, "
        f"m.rowid{order}" + (" LIMIT ?" if limit is not None else "")
    )
    args = (user_id, *params) + ((limit,) if limit is not None else ())
    return map(_import_line, _containing(conn.execute(sql, args), needle, 3, budget))


def _merged(
    conn: sqlite3.Connection,
    user_id: str,
    character_id: str,
    key: Key | None,
    op: str,
    newest_first: bool,
    *,
    match: Sequence[str] = (),
    needle: str = "",
    limit: int | None = None,
    budget: int | None = None,
) -> Iterator[Line]:
    """Both sources in one order; with `limit`, each source reads at most that many rows;
    with `needle`, only rows whose text contains it (checked before a line is made of it)."""
    return heapq.merge(
        _log_rows(
            conn,
            user_id,
            character_id,
            key,
            op,
            newest_first,
            match=match,
            needle=needle,
            limit=limit,
            budget=budget,
        ),
        _import_rows(
            conn,
            user_id,
            key,
            op,
            newest_first,
            match=match,
            needle=needle,
            limit=limit,
            budget=budget,
        ),
        key=lambda line: line.key,
        reverse=newest_first,
    )


def _take(lines: Iterator[Line], count: int) -> tuple[list[Line], bool]:
    """The first `count` lines and whether there are more."""
    taken = list(itertools.islice(lines, count + 1))
    return taken[:count], len(taken) > count


# --- the API's reads ---------------------------------------------------------------------------


def page(
    conn: sqlite3.Connection,
    user_id: str,
    character_id: str,
    *,
    limit: int,
    before: Key | None = None,
    after: Key | None = None,
    around: Key | None = None,
) -> Page:
    """One page of the pair's history, oldest first: the newest `limit` lines; or those
    just `before` a cursor; or just `after` it; or `around` it (the line itself and what
    follows it, with up to half the page before it)."""
    if around is not None:
        half = limit // 2
        older, more_older = _take(
            _merged(conn, user_id, character_id, around, "<", True, limit=half + 1), half
        )
        newer, more_newer = _take(
            _merged(conn, user_id, character_id, around, ">=", False, limit=limit - len(older) + 1),
            limit - len(older),
        )
        lines = [*reversed(older), *newer]
    elif after is not None:
        lines, more_newer = _take(
            _merged(conn, user_id, character_id, after, ">", False, limit=limit + 1), limit
        )
        more_older = True
    else:
        newest, more_older = _take(
            _merged(conn, user_id, character_id, before, "<", True, limit=limit + 1), limit
        )
        lines, more_newer = list(reversed(newest)), before is not None
    return Page(
        lines,
        older=lines[0].key.cursor() if lines and more_older else None,
        newer=lines[-1].key.cursor() if lines and more_newer else None,
    )


TRIGRAM = 3  # the index looks up texts of at least three characters
_NUMBER = re.compile(r"\d{3,}")


def match_all(query: str) -> list[str]:
    """The terms a line must all contain to match `query` ([] when it has none the index can
    look up): its words as the memory search takes them (`words.query_terms`) and, unlike
    there, its numbers of three digits or more ("4711"); at most `recall.MAX_TERMS`, the
    longest."""
    numbers = list(dict.fromkeys(_NUMBER.findall(query)))
    terms = sorted(dict.fromkeys([*lookup_terms(query), *numbers]), key=len, reverse=True)
    return terms[:MAX_TERMS]


def search(
    conn: sqlite3.Connection,
    user_id: str,
    character_id: str,
    query: str,
    *,
    limit: int,
    before: Key | None = None,
    budget: int | None = None,
) -> tuple[list[Line], str | None]:
    """The lines that match `query`, newest first, and the cursor of the next page (None:
    no more). `budget`: the most rows each source's substring scan reads (a query the index
    cannot look up), else `ScanTooLong`."""
    match = match_all(query)
    needle = query.strip().casefold()
    if not match and len(needle) >= TRIGRAM:
        match = [needle]  # only stopwords or signs: the index finds it as it stands
    if match:
        lines = _merged(
            conn, user_id, character_id, before, "<", True, match=match, limit=limit + 1
        )
    elif needle:
        lines = _merged(
            conn, user_id, character_id, before, "<", True, needle=needle, budget=budget
        )
    else:
        return [], None
    hits, more = _take(lines, limit)
    return hits, hits[-1].key.cursor() if hits and more else None
