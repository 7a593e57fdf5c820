"""The journal's tables (migration `m003_journal`): reads on the reader pool, every write
through the database's one writer (`Database.execute_write_fn`), each a single transaction.

A user's journal lives in their space (one per user, made on the first write). A journal day
is `(space_id, calendar_date)`; the calendar date is the user's, as the message log recorded
it (`messages.calendar_date`, `app.core.clock`). A day needs no messages: any date gets its
row on the first write (an entry written by hand, whose version has no sources). Chat conversations are read from the message log
(one per character per day) and never copied; imported conversations are stored here.
Nothing is updated in place but pointers and marks: a new draft supersedes the current one,
an edit or restore appends a version, a delete sets `deleted_at`; only a purge from the trash
removes rows.

One module: the journal's tables, one writer's transactions over rows that reference one another
(the row-level SQL is `rows`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import msgspec

from app.journal.day import Conversation, DayMessage, Source
from app.journal.models import DaySummary, Draft, Entry, FailedJob, Job
from app.journal.rows import (
    ENTRY_OF_USER,
    append_version,
    draft_of,
    draft_refs,
    ensure_day,
    entry_of,
    entry_row,
    job_of,
    new_id,
    require_live,
    stored_map,
    version_refs,
)
from app.journal.support import Support, VersionSentence, draft_map, version_map
from app.journal.trace import DraftTrace, stored_json
from app.storage.database import Database
from app.storage.errors import Conflict, Missing

CHAT_PREFIX = "chat-"
# Bounds that hold every calendar date (`YYYY-MM-DD` compares as text).
FIRST_DATE, LAST_DATE = "0000-01-01", "9999-12-31"
AFTER_EVERY_DATE = "9999-99-99"  # sorts after every date: "before it" is every day
OPEN_JOB_STATES = ("queued", "reconstruct", "narrate")


@dataclass(frozen=True, slots=True)
class ImportedMessage:
    role: str
    text: str
    at: float | None


@dataclass(frozen=True, slots=True)
class StoredBase:
    """The stored text a redraft revises (seed 004 `include_existing`): the live entry's
    current version (`entry`, its version id) or, without an entry, the day's current draft
    (`draft`, its draft id)."""

    origin: Literal["entry", "draft"]
    ref_id: str
    text: str


def chat_conversation_id(character_id: str, date: str) -> str:
    return f"{CHAT_PREFIX}{character_id}-{date}"


class JournalStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- days ----------------------------------------------------------------------------------

    async def days(
        self, user_id: str, start: str = FIRST_DATE, end: str = LAST_DATE
    ) -> list[DaySummary]:
        """Every day with messages, an entry or a draft, newest first, with the count of its
        entry's photos (`photos`) and the first one's asset id (`photo`); with `start`/`end`
        (calendar dates, inclusive) only those days (a month of the calendar): every count
        then reads only the range's part of its index."""
        return await self.db.execute_fn(lambda conn: _days_between(conn, user_id, start, end))

    async def day_page(
        self, user_id: str, *, before: str | None, limit: int
    ) -> tuple[list[DaySummary], str | None]:
        """The newest `limit` days (as `days` gives them) before the date `before` (all
        when None), and the date to ask `before` for the next page (None: no older day).

        The page's range is found first from the days' dates alone (index-only reads of
        the message log and the journal's days); only that range is counted. A journal
        day that holds nothing (any more) takes a place in the range without being listed:
        a page may hold fewer than `limit` days and still have a next one."""

        def read(conn: sqlite3.Connection) -> tuple[list[DaySummary], str | None]:
            end = before or AFTER_EVERY_DATE
            dates = [
                row[0] for row in conn.execute(_PAGE_DATES, (user_id, end, user_id, end, limit + 1))
            ]
            if not dates:
                return [], None
            window = dates[:limit]
            found = _days_between(conn, user_id, window[-1], window[0])
            return found, (window[-1] if len(dates) > limit else None)

        return await self.db.execute_fn(read)

    async def latest_day(self, user_id: str) -> str | None:
        """The newest day with messages, an entry, a draft or an import (None: none yet)."""

        def read(conn: sqlite3.Connection) -> str | None:
            scoped = (
                "SELECT MAX(d.calendar_date) FROM journal_days d JOIN journal_spaces s "
                "ON s.space_id = d.space_id AND s.user_id = ? WHERE EXISTS (SELECT 1 FROM "
            )
            found = [
                conn.execute(
                    "SELECT MAX(calendar_date) FROM messages WHERE user_id = ?", (user_id,)
                ).fetchone()[0]
            ]
            for table, live in (
                ("journal_entries", " AND x.deleted_at IS NULL"),
                ("journal_drafts", " AND x.status = 'current'"),
                ("journal_conversations", ""),
            ):
                found.append(
                    conn.execute(
                        f"{scoped}{table} x WHERE x.journal_day_id = d.day_id{live})", (user_id,)
                    ).fetchone()[0]
                )
            return max((date for date in found if date), default=None)

        return await self.db.execute_fn(read)

    async def conversations(self, user_id: str, date: str) -> list[Conversation]:
        """The day's conversations in the order they began: one per character from the chat
        log, and every import."""

        def read(conn: sqlite3.Connection) -> list[Conversation]:
            found: list[tuple[float, Conversation]] = []
            chats: dict[str, list[DayMessage]] = {}
            started: dict[str, float] = {}
            # A user line's action mark (`message_actions`): done when the character
            # carried out what the line asked.
            for row_id, character_id, role, text, created, done in conn.execute(
                "SELECT m.id, m.character_id, m.role, m.text, m.created, "
                "COALESCE(a.succeeded, 0) FROM messages m LEFT JOIN message_actions a "
                "ON m.role = 'user' AND a.user_id = m.user_id "
                "AND a.character_id = m.character_id AND a.turn_id = m.turn_id "
                "WHERE m.user_id = ? AND m.calendar_date = ? ORDER BY m.created, m.id",
                (user_id, date),
            ):
                chats.setdefault(character_id, []).append(
                    DayMessage(f"{CHAT_PREFIX}{row_id}", role, text, created, bool(done))
                )
                started.setdefault(character_id, created)
            for character_id, messages in chats.items():
                found.append(
                    (
                        started[character_id],
                        Conversation(
                            chat_conversation_id(character_id, date), "chat", character_id, messages
                        ),
                    )
                )
            for conversation_id, created_at in conn.execute(
                "SELECT c.conversation_id, c.created_at FROM journal_conversations c "
                "JOIN journal_days d ON d.day_id = c.journal_day_id "
                "JOIN journal_spaces s ON s.space_id = d.space_id "
                "WHERE s.user_id = ? AND d.calendar_date = ? ORDER BY c.created_at",
                (user_id, date),
            ).fetchall():
                messages = [
                    DayMessage(r[0], r[1], r[2], r[3])
                    for r in conn.execute(
                        "SELECT message_id, role, text, at FROM journal_messages "
                        "WHERE conversation_id = ? ORDER BY position",
                        (conversation_id,),
                    )
                ]
                first = next((m.at for m in messages if m.at is not None), created_at)
                found.append((first, Conversation(conversation_id, "import", None, messages)))
            found.sort(key=lambda pair: pair[0])
            return [conversation for _, conversation in found]

        return await self.db.execute_fn(read)

    async def import_conversation(
        self, user_id: str, date: str, messages: Sequence[ImportedMessage]
    ) -> tuple[str, list[str]]:
        """Store one imported conversation, all or nothing."""

        def write(conn: sqlite3.Connection) -> tuple[str, list[str]]:
            day_id = ensure_day(conn, user_id, date)
            space_id = conn.execute(
                "SELECT space_id FROM journal_days WHERE day_id = ?", (day_id,)
            ).fetchone()[0]
            conversation_id = new_id("conv")
            conn.execute(
                "INSERT INTO journal_conversations (conversation_id, space_id, "
                "journal_day_id, source, character_id, created_at) "
                "VALUES (?, ?, ?, 'import', NULL, ?)",
                (conversation_id, space_id, day_id, time.time()),
            )
            ids = [new_id("msg") for _ in messages]
            conn.executemany(
                "INSERT INTO journal_messages (message_id, conversation_id, "
                "position, role, text, at) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (mid, conversation_id, i, m.role, m.text, m.at)
                    for i, (mid, m) in enumerate(zip(ids, messages, strict=True))
                ],
            )
            return conversation_id, ids

        return await self.db.execute_write_fn(write)

    # --- drafts --------------------------------------------------------------------------------

    async def save_draft(
        self,
        user_id: str,
        date: str,
        *,
        text: str,
        reconstruction_status: str,
        narration: str,
        validation: Sequence[str],
        trace: DraftTrace,
        sources: Sequence[Source],
        job_id: str | None = None,
        base: StoredBase | None = None,
        support: Support | None = None,
    ) -> str:
        """Store a new current draft with its source refs (each with the line's `act`), the
        stored text it revised (`base`) and its sentences' map (`support`: where each came
        from, what was left out); the previous one is superseded. With `job_id`,
        that job is marked done with it in the same transaction: a job is done exactly when
        its draft exists."""

        def write(conn: sqlite3.Connection) -> str:
            day_id = ensure_day(conn, user_id, date)
            conn.execute(
                "UPDATE journal_drafts SET status = 'superseded' "
                "WHERE journal_day_id = ? AND status = 'current'",
                (day_id,),
            )
            draft_id = new_id("draft")
            conn.execute(
                "INSERT INTO journal_drafts (draft_id, journal_day_id, text, status, "
                "reconstruction_status, narration, validation_json, trace_json, "
                "created_at, base_origin, base_id, support_json) "
                "VALUES (?, ?, ?, 'current', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    draft_id,
                    day_id,
                    text,
                    reconstruction_status,
                    narration,
                    json.dumps(list(validation)),
                    stored_json(trace),
                    time.time(),
                    base.origin if base else None,
                    base.ref_id if base else None,
                    msgspec.json.encode(support).decode() if support else "{}",
                ),
            )
            conn.executemany(
                "INSERT INTO journal_draft_source_refs (draft_id, position, "
                "source_id, conversation_id, message_id, act) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (draft_id, i, s.source_id, s.conversation_id, s.message_id, s.act)
                    for i, s in enumerate(sources)
                ],
            )
            if job_id is not None:
                conn.execute(
                    "UPDATE journal_jobs SET state = 'done', draft_id = ?, "
                    "updated_at = ? WHERE job_id = ?",
                    (draft_id, time.time(), job_id),
                )
            return draft_id

        return await self.db.execute_write_fn(write)

    async def draft(self, user_id: str, draft_id: str) -> Draft:
        def read(conn: sqlite3.Connection) -> Draft:
            row = conn.execute(
                "SELECT r.*, d.calendar_date FROM journal_drafts r "
                "JOIN journal_days d ON d.day_id = r.journal_day_id "
                "JOIN journal_spaces s ON s.space_id = d.space_id "
                "WHERE s.user_id = ? AND r.draft_id = ?",
                (user_id, draft_id),
            ).fetchone()
            if row is None:
                raise Missing(f"no journal draft {draft_id!r}")
            return draft_of(row, draft_refs(conn, draft_id))

        return await self.db.execute_fn(read)

    async def drafts_of_day(self, user_id: str, date: str) -> list[Draft]:
        def read(conn: sqlite3.Connection) -> list[Draft]:
            rows = conn.execute(
                "SELECT r.*, d.calendar_date FROM journal_drafts r "
                "JOIN journal_days d ON d.day_id = r.journal_day_id "
                "JOIN journal_spaces s ON s.space_id = d.space_id "
                "WHERE s.user_id = ? AND d.calendar_date = ? ORDER BY r.created_at DESC",
                (user_id, date),
            ).fetchall()
            return [draft_of(row, draft_refs(conn, row["draft_id"])) for row in rows]

        return await self.db.execute_fn(read)

    async def redraft_base(self, user_id: str, date: str) -> StoredBase | None:
        """What a draft with `include_existing` revises (seed 004): the stored entry version
        when the day has a live entry; a leftover draft only when there is no entry; else
        None."""

        def read(conn: sqlite3.Connection) -> StoredBase | None:
            scoped = (
                "JOIN journal_days d ON d.day_id = {}.journal_day_id "
                "JOIN journal_spaces s ON s.space_id = d.space_id "
                "WHERE s.user_id = ? AND d.calendar_date = ? "
            )
            row = conn.execute(
                "SELECT v.version_id, v.text FROM journal_entries e "
                "JOIN journal_entry_versions v ON v.version_id = e.current_version_id "
                + scoped.format("e")
                + "AND e.deleted_at IS NULL",
                (user_id, date),
            ).fetchone()
            if row is not None:
                return StoredBase("entry", row[0], row[1])
            row = conn.execute(
                "SELECT r.draft_id, r.text FROM journal_drafts r "
                + scoped.format("r")
                + "AND r.status = 'current'",
                (user_id, date),
            ).fetchone()
            return StoredBase("draft", row[0], row[1]) if row is not None else None

        return await self.db.execute_fn(read)

    # --- entries -------------------------------------------------------------------------------

    async def create_entry(self, user_id: str, date: str, text: str, draft_id: str | None) -> str:
        """A new entry for the day, from a draft (its refs come along) or from scratch."""

        def write(conn: sqlite3.Connection) -> str:
            day_id = ensure_day(conn, user_id, date)
            refs: list[tuple[str, str]] = []
            known: list[VersionSentence] = []  # by hand: every sentence the user's own
            if draft_id is not None:
                refs, known = _draft_of_day(conn, draft_id, day_id, date)
            if conn.execute(
                "SELECT 1 FROM journal_entries WHERE journal_day_id = ? AND deleted_at IS NULL",
                (day_id,),
            ).fetchone():
                raise Conflict("entry_exists", f"{date} has an entry already; edit it")
            entry_id = new_id("entry")
            try:
                conn.execute(
                    "INSERT INTO journal_entries (entry_id, journal_day_id, created_at) "
                    "VALUES (?, ?, ?)",
                    (entry_id, day_id, time.time()),
                )
            except sqlite3.IntegrityError:  # another process's entry of the day came in between
                raise Conflict("entry_exists", f"{date} has an entry already; edit it") from None
            append_version(
                conn,
                entry_id,
                "draft" if draft_id else "edit",
                text,
                refs,
                draft_id,
                version_map(text, known),
            )
            return entry_id

        return await self.db.execute_write_fn(write)

    async def edit_entry(
        self, user_id: str, entry_id: str, text: str, draft_id: str | None = None
    ) -> None:
        """A new version with `text`; it keeps the sources of the version it edits, and of
        its map the sentences still in `text` (the others are the user's edits). With
        `draft_id` (a draft of the entry's day) the version is that draft taken over as the
        entry's next version: origin `draft`, the draft's sources, each sentence the
        draft's or the user's edit (history stays)."""

        def write(conn: sqlite3.Connection) -> None:
            row = entry_row(conn, user_id, entry_id, hold=True)
            require_live(row)
            if draft_id is None:
                current = row["current_version_id"]
                known = _edited_map(conn, current)
                append_version(
                    conn,
                    entry_id,
                    "edit",
                    text,
                    version_refs(conn, current),
                    provenance=version_map(text, known) if known is not None else [],
                )
                return
            refs, known = _draft_of_day(conn, draft_id, row["journal_day_id"], row["calendar_date"])
            append_version(conn, entry_id, "draft", text, refs, draft_id, version_map(text, known))

        await self.db.execute_write_fn(write)

    async def restore_entry(self, user_id: str, entry_id: str, version_id: str) -> None:
        """A new version with the text, sources and map of an older one (history stays)."""

        def write(conn: sqlite3.Connection) -> None:
            require_live(entry_row(conn, user_id, entry_id, hold=True))
            old = conn.execute(
                "SELECT text FROM journal_entry_versions WHERE entry_id = ? AND version_id = ?",
                (entry_id, version_id),
            ).fetchone()
            if old is None:
                raise Missing(f"entry {entry_id!r} has no version {version_id!r}")
            append_version(
                conn,
                entry_id,
                "restore",
                old[0],
                version_refs(conn, version_id),
                provenance=stored_map(conn, version_id),
            )

        await self.db.execute_write_fn(write)

    async def delete_entry(self, user_id: str, entry_id: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            require_live(entry_row(conn, user_id, entry_id, hold=True))
            conn.execute(
                "UPDATE journal_entries SET deleted_at = ? WHERE entry_id = ?",
                (time.time(), entry_id),
            )

        await self.db.execute_write_fn(write)

    async def undelete_entry(self, user_id: str, entry_id: str) -> None:
        def write(conn: sqlite3.Connection) -> None:
            row = entry_row(conn, user_id, entry_id, hold=True)
            if row["deleted_at"] is None:
                return
            if conn.execute(
                "SELECT 1 FROM journal_entries WHERE journal_day_id = ? AND deleted_at IS NULL",
                (row["journal_day_id"],),
            ).fetchone():
                raise Conflict("entry_exists", f"{row['calendar_date']} has another entry now")
            try:
                conn.execute(
                    "UPDATE journal_entries SET deleted_at = NULL WHERE entry_id = ?", (entry_id,)
                )
            except sqlite3.IntegrityError:  # another process's entry of the day came in between
                raise Conflict(
                    "entry_exists", f"{row['calendar_date']} has another entry now"
                ) from None

        await self.db.execute_write_fn(write)

    async def purge_entry(self, user_id: str, entry_id: str) -> list[str]:
        """Remove an entry for good — only one that is in the trash — with its versions, its
        photos' rows and its import record (an imported diary's entry comes back when it is
        imported again); returns the photos' files (relative to the data dir) for the caller
        to remove once the rows are gone (`app.journal.media.remove_files`)."""

        def write(conn: sqlite3.Connection) -> list[str]:
            row = entry_row(conn, user_id, entry_id, hold=True)
            if row["deleted_at"] is None:
                raise Conflict("not_in_trash", "only an entry in the trash can be purged")
            files = [
                name
                for pair in conn.execute(
                    "SELECT file, thumb FROM media_assets WHERE entry_id = ?", (entry_id,)
                )
                for name in pair
            ]
            conn.execute("DELETE FROM media_assets WHERE entry_id = ?", (entry_id,))
            conn.execute(
                "DELETE FROM journal_entry_version_source_refs WHERE version_id IN "
                "(SELECT version_id FROM journal_entry_versions WHERE entry_id = ?)",
                (entry_id,),
            )
            conn.execute("DELETE FROM journal_entry_versions WHERE entry_id = ?", (entry_id,))
            # Its import record goes too: importing the diary again brings the entry back.
            conn.execute("DELETE FROM journal_imports WHERE entry_id = ?", (entry_id,))
            conn.execute("DELETE FROM journal_entries WHERE entry_id = ?", (entry_id,))
            return files

        return await self.db.execute_write_fn(write)

    async def entry(self, user_id: str, entry_id: str) -> Entry:
        def read(conn: sqlite3.Connection) -> Entry:
            return entry_of(conn, entry_row(conn, user_id, entry_id))

        return await self.db.execute_fn(read)

    async def entries(self, user_id: str, *, deleted: bool) -> list[Entry]:
        """Live entries (oldest day first) or the trash (newest deletion first)."""

        def read(conn: sqlite3.Connection) -> list[Entry]:
            rows = conn.execute(
                ENTRY_OF_USER.replace("AND e.entry_id = ?", "AND e.deleted_at IS ")
                + (
                    "NOT NULL ORDER BY e.deleted_at DESC"
                    if deleted
                    else "NULL ORDER BY d.calendar_date"
                ),
                (user_id,),
            ).fetchall()
            return [entry_of(conn, row) for row in rows]

        return await self.db.execute_fn(read)

    async def day_entry(self, user_id: str, date: str) -> Entry | None:
        def read(conn: sqlite3.Connection) -> Entry | None:
            row = conn.execute(
                ENTRY_OF_USER.replace(
                    "AND e.entry_id = ?", "AND d.calendar_date = ? AND e.deleted_at IS NULL"
                ),
                (user_id, date),
            ).fetchone()
            return entry_of(conn, row) if row is not None else None

        return await self.db.execute_fn(read)

    # --- jobs ----------------------------------------------------------------------------------

    async def create_job(self, user_id: str, date: str, owner: str) -> str:
        """A queued job run by the process `owner`; `journal_busy` while another of the
        user's jobs is open (in any process: the store's unique index decides a race)."""

        def write(conn: sqlite3.Connection) -> str:
            busy = conn.execute(
                "SELECT job_id FROM journal_jobs WHERE user_id = ? AND state IN (?, ?, ?)",
                (user_id, *OPEN_JOB_STATES),
            ).fetchone()
            if busy is not None:
                raise _busy(busy[0])
            job_id = new_id("job")
            now = time.time()
            try:
                conn.execute(
                    "INSERT INTO journal_jobs (job_id, user_id, calendar_date, state, "
                    "owner, created_at, updated_at) VALUES (?, ?, ?, 'queued', ?, ?, ?)",
                    (job_id, user_id, date, owner, now, now),
                )
            except sqlite3.IntegrityError:  # another process's job came in between
                raise _busy("of another process") from None
            return job_id

        return await self.db.execute_write_fn(write)

    async def set_job(
        self,
        job_id: str,
        state: str,
        *,
        draft_id: str | None = None,
        error: tuple[str, str] | None = None,
    ) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE journal_jobs SET state = ?, draft_id = ?, error_code = ?, "
                "error_message = ?, updated_at = ? WHERE job_id = ?",
                (
                    state,
                    draft_id,
                    error[0] if error else None,
                    error[1] if error else None,
                    time.time(),
                    job_id,
                ),
            )

        await self.db.execute_write_fn(write)

    async def job(self, user_id: str, job_id: str) -> Job:
        def read(conn: sqlite3.Connection) -> Job:
            row = conn.execute(
                "SELECT * FROM journal_jobs WHERE user_id = ? AND job_id = ?", (user_id, job_id)
            ).fetchone()
            if row is None:
                raise Missing(f"no journal job {job_id!r}")
            return job_of(row)

        return await self.db.execute_fn(read)

    async def open_jobs(self) -> list[tuple[str, str | None]]:
        """(job id, owner) of every open job, of every process."""

        def read(conn: sqlite3.Connection) -> list[tuple[str, str | None]]:
            return [
                (row[0], row[1])
                for row in conn.execute(
                    "SELECT job_id, owner FROM journal_jobs WHERE state IN (?, ?, ?) "
                    "ORDER BY created_at",
                    OPEN_JOB_STATES,
                )
            ]

        return await self.db.execute_fn(read)

    async def fail_jobs(self, job_ids: list[str], code: str, message: str) -> list[FailedJob]:
        """Mark the jobs `job_ids` failed where they are still open (a job that ended in
        between, or that another process failed first, is left); returns those it failed."""

        def write(conn: sqlite3.Connection) -> list[FailedJob]:
            failed = []
            for job_id in job_ids:
                changed = conn.execute(
                    "UPDATE journal_jobs SET state = 'failed', error_code = ?, "
                    "error_message = ?, updated_at = ? WHERE job_id = ? AND state IN (?, ?, ?)",
                    (code, message, time.time(), job_id, *OPEN_JOB_STATES),
                ).rowcount
                if changed:
                    user_id = conn.execute(
                        "SELECT user_id FROM journal_jobs WHERE job_id = ?", (job_id,)
                    ).fetchone()[0]
                    failed.append(FailedJob(job_id, user_id))
            return failed

        return await self.db.execute_write_fn(write) if job_ids else []


def _busy(job: str) -> Conflict:
    return Conflict("journal_busy", f"journal job {job} is still running; one at a time")


def _draft_of_day(
    conn: sqlite3.Connection, draft_id: str, day_id: str, date: str
) -> tuple[list[tuple[str, str]], list[VersionSentence]]:
    """The sources of a draft of the day `day_id` and its sentences as a version maps them
    (`support.draft_map`); `Missing` for a draft of another day (or another user's: a day
    is one user's)."""
    row = conn.execute(
        "SELECT journal_day_id, text, support_json FROM journal_drafts WHERE draft_id = ?",
        (draft_id,),
    ).fetchone()
    if row is None or row[0] != day_id:
        raise Missing(f"no journal draft {draft_id!r} for {date}")
    refs = [(r["conversation_id"], r["message_id"]) for r in draft_refs(conn, draft_id)]
    return refs, draft_map(draft_id, row[1], msgspec.json.decode(row[2], type=Support))


def _edited_map(conn: sqlite3.Connection, version_id: str | None) -> list[VersionSentence] | None:
    """What an edit of the version `version_id` is compared with: its map; for one without
    (from before the map was kept) that was a draft taken over, that draft's. None: not
    known (an import, or an edit of one): the edit has no map either."""
    if version_id is None:
        return None
    known = stored_map(conn, version_id)
    if known:
        return known
    row = conn.execute(
        "SELECT v.draft_id, r.text, r.support_json FROM journal_entry_versions v "
        "JOIN journal_drafts r ON r.draft_id = v.draft_id WHERE v.version_id = ?",
        (version_id,),
    ).fetchone()
    if row is None:
        return None
    return draft_map(row[0], row[1], msgspec.json.decode(row[2], type=Support))


_PAGE_DATES = (
    "SELECT listed FROM (SELECT DISTINCT calendar_date AS listed FROM messages WHERE user_id = ? "
    "AND calendar_date < ? UNION SELECT d.calendar_date FROM journal_days d "
    "JOIN journal_spaces s ON s.space_id = d.space_id AND s.user_id = ? "
    "WHERE d.calendar_date < ?) AS dates ORDER BY listed DESC LIMIT ?"
)


def _days_between(conn: sqlite3.Connection, user_id: str, start: str, end: str) -> list[DaySummary]:
    """`JournalStore.days` on the reader thread: the days from `start` to `end`, newest first."""
    span, bounds = " AND calendar_date BETWEEN ? AND ?", (start, end)
    journal_span = " AND d.calendar_date BETWEEN ? AND ?"
    days: dict[str, DaySummary] = {}

    def day(date: str) -> DaySummary:
        return days.setdefault(date, DaySummary(date))

    # Two index-only counts (`messages_by_day`, `messages_user_lines`): cheaper than
    # one scan that reads each row's role.
    for date, total in conn.execute(
        "SELECT calendar_date, COUNT(*) FROM messages WHERE user_id = ?"
        + span
        + " GROUP BY calendar_date",
        (user_id, *bounds),
    ):
        day(date).messages += total
    for date, users in conn.execute(
        "SELECT calendar_date, COUNT(*) FROM messages WHERE user_id = ? AND "
        "role = 'user'" + span + " GROUP BY calendar_date",
        (user_id, *bounds),
    ):
        day(date).user_messages += users
    scoped = (
        "FROM journal_days d JOIN journal_spaces s ON s.space_id = d.space_id "
        "AND s.user_id = ?" + journal_span + " "
    )
    for date, total, users in conn.execute(
        "SELECT d.calendar_date, COUNT(m.message_id), COUNT(CASE WHEN m.role = 'user' THEN 1 END) "
        + scoped
        + "JOIN journal_conversations c ON c.journal_day_id = d.day_id "
        "JOIN journal_messages m ON m.conversation_id = c.conversation_id "
        "GROUP BY d.calendar_date",
        (user_id, *bounds),
    ):
        entry = day(date)
        entry.messages += total
        entry.user_messages += users or 0
    for date, entry_id in conn.execute(
        "SELECT d.calendar_date, e.entry_id " + scoped + "JOIN journal_entries e "
        "ON e.journal_day_id = d.day_id AND e.deleted_at IS NULL",
        (user_id, *bounds),
    ):
        day(date).entry_id = entry_id
    for date, draft_id in conn.execute(
        "SELECT d.calendar_date, r.draft_id " + scoped + "JOIN journal_drafts r "
        "ON r.journal_day_id = d.day_id AND r.status = 'current'",
        (user_id, *bounds),
    ):
        day(date).draft_id = draft_id
    # The live entry's photos: how many, and one thumbnail for the day's cell.
    for date, count, first in conn.execute(
        "SELECT d.calendar_date, COUNT(*), MIN(m.asset_id) "
        + scoped
        + "JOIN journal_entries e ON e.journal_day_id = d.day_id "
        "AND e.deleted_at IS NULL JOIN media_assets m ON m.entry_id = e.entry_id "
        "GROUP BY d.calendar_date",
        (user_id, *bounds),
    ):
        day(date).photos, day(date).photo = count, first
    return sorted(days.values(), key=lambda d: d.date, reverse=True)
