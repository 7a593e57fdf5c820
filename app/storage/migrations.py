"""Append-only schema migrations, recorded in the `_migrations` table.

Add a new function at the end with the next number; never edit one that has shipped.
`apply_migrations` runs the missing ones in number order, each in its own transaction; a
function registered out of its number fails at import. A store records each by name, so the
order only decides what a store still lacks runs first.

One module: it only grows, one self-contained function per schema change, in the order they
run in.

`m004`–`m006` were written side by side and shipped as 1, 2, 3, 6, 4, 5 (the profile's
migration reached main first); they touch disjoint tables, so a store that ran them in
that order has the schema of one that runs them in number order, and each later migration
(`m007` reads `m005`'s table, `m010` `m006`'s) still runs after the one it needs.

One history for both engines: a migration is written once, in SQLite's SQL; on PostgreSQL
its CREATE/ALTER TABLE statements are read in PostgreSQL's types (`dialect.pg_ddl`), and
only what has no counterpart (FTS5's virtual tables and their triggers: pg_trgm indexes
there) is written per engine, under `is_postgres(db)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from app.storage.connection import Connection, Executes
from app.storage.dialect import is_postgres, pg_ddl

Migration = Callable[[Executes], None]
MIGRATIONS: list[Migration] = []
# Where the applied migrations are recorded; a store without it was never set up.
MIGRATIONS_TABLE = "_migrations"


def migration(fn: Migration) -> Migration:
    """Register `fn` (named `mNNN_what`) as the next migration: its number must be the next."""
    number = int(fn.__name__[1:4])
    if number != len(MIGRATIONS) + 1:
        raise AssertionError(f"{fn.__name__} registered as migration {len(MIGRATIONS) + 1}")
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_users(db: Executes) -> None:
    db.execute(
        """
        CREATE TABLE users (
            user_id TEXT PRIMARY KEY,
            password_hash TEXT NOT NULL,
            created_at REAL NOT NULL
        )
        """
    )
    db.execute(
        """
        CREATE TABLE api_tokens (
            token_hash TEXT PRIMARY KEY,
            user_id TEXT NOT NULL REFERENCES users(user_id),
            created_at REAL NOT NULL
        )
        """
    )


class _PostgresSchema:
    """The connection a migration gets on PostgreSQL: its table statements in PostgreSQL's
    types, everything else as written."""

    engine = "postgresql"

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if sql.lstrip().upper().startswith(("CREATE TABLE", "ALTER TABLE")):
            sql = pg_ddl(sql)
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        return self._conn.executemany(sql, rows)


def applied(db: Connection) -> list[str]:
    if is_postgres(db):
        # One process migrates at a time: the others wait here until it has committed.
        db.execute("SELECT pg_advisory_xact_lock(4711)")
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, "
            "applied_at DOUBLE PRECISION)"
        )
        return [
            row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY applied_at")
        ]
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (name TEXT PRIMARY KEY, applied_at REAL)"
    )
    return [row[0] for row in db.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY rowid")]


def apply_migrations(db: Connection) -> list[str]:
    """Run every migration not yet recorded; return the names that ran (on PostgreSQL all
    of them in one transaction, so processes starting together migrate once)."""
    if is_postgres(db):
        with db:
            return _apply(db, _PostgresSchema(db))
    return _apply(db, db)


def _apply(db: Connection, schema: Executes) -> list[str]:
    done = set(applied(db))
    ran = []
    for fn in MIGRATIONS:
        if fn.__name__ in done:
            continue
        with db:
            fn(schema)
            db.execute(
                f"INSERT INTO {MIGRATIONS_TABLE} (name, applied_at) VALUES (?, ?)",
                (fn.__name__, time.time()),
            )
        ran.append(fn.__name__)
    return ran


@migration
def m002_messages(db: Executes) -> None:
    """The durable message log: every stored turn, written by the pipelines' dispatcher.

    One row per turn text (a user block, or one answer of the character; a continue run
    under the same `turn_id` adds a row). `entry_key` makes a rerun of the same write (crash
    recovery) a no-op. `created` is when it was said; `calendar_date` the local day it
    belongs to (seed 004: the calendar day is not derived from `created` later).
    """
    db.execute(
        """
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            entry_key TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            turn_id TEXT NOT NULL,
            message_ids TEXT NOT NULL DEFAULT '[]',
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            origin TEXT NOT NULL DEFAULT '',
            text TEXT NOT NULL,
            created REAL NOT NULL,
            calendar_date TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX messages_by_day ON messages (user_id, calendar_date, created)")
    db.execute("CREATE INDEX messages_by_turn ON messages (turn_id)")


@migration
def m003_journal(db: Executes) -> None:
    """The journal (design §8, seed 004): spaces, days, imported conversations, drafts, entries
    with versions and soft delete, the relational source refs, and generation jobs.

    The chat log (`messages`) is read as conversations of source `chat` and is not copied;
    a ref names its message as `chat-<messages.id>` or by the imported message's id. The
    index `messages_user_lines` lets the list of days count a user's own lines per day from
    the index alone (all lines: `messages_by_day`).
    """
    # One statement at a time: `executescript` would commit the migration's transaction.
    for statement in [
        "\n        CREATE TABLE journal_spaces (\n            space_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL UNIQUE,\n            visibility TEXT NOT NULL DEFAULT 'user',\n            created_at REAL NOT NULL\n        )",
        "\n        CREATE TABLE journal_days (\n            day_id TEXT PRIMARY KEY,\n            space_id TEXT NOT NULL REFERENCES journal_spaces(space_id),\n            calendar_date TEXT NOT NULL,\n            scratch_json TEXT NOT NULL DEFAULT '{}',\n            created_at REAL NOT NULL,\n            UNIQUE (space_id, calendar_date)\n        )",
        "\n        CREATE TABLE journal_conversations (\n            conversation_id TEXT PRIMARY KEY,\n            space_id TEXT NOT NULL,\n            journal_day_id TEXT REFERENCES journal_days(day_id),\n            source TEXT NOT NULL CHECK (source IN ('chat', 'import')),\n            character_id TEXT,\n            created_at REAL NOT NULL\n        )",
        "\n        CREATE INDEX journal_conversations_by_day ON journal_conversations (journal_day_id)",
        "\n        CREATE TABLE journal_messages (\n            message_id TEXT PRIMARY KEY,\n            conversation_id TEXT NOT NULL REFERENCES journal_conversations(conversation_id),\n            position INTEGER NOT NULL,\n            role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),\n            text TEXT NOT NULL,\n            at REAL,\n            UNIQUE (conversation_id, position)\n        )",
        "\n        CREATE TABLE journal_drafts (\n            draft_id TEXT PRIMARY KEY,\n            journal_day_id TEXT NOT NULL REFERENCES journal_days(day_id),\n            text TEXT NOT NULL,\n            status TEXT NOT NULL CHECK (status IN ('current', 'superseded')),\n            reconstruction_status TEXT NOT NULL\n                CHECK (reconstruction_status IN ('valid', 'fallback')),\n            narration TEXT NOT NULL CHECK (narration IN ('model', 'local')),\n            validation_json TEXT NOT NULL DEFAULT '[]',\n            trace_json TEXT NOT NULL DEFAULT '{}',\n            created_at REAL NOT NULL\n        )",
        "\n        CREATE INDEX journal_drafts_by_day ON journal_drafts (journal_day_id, created_at)",
        "\n        CREATE INDEX journal_drafts_current ON journal_drafts (journal_day_id, draft_id)\n            WHERE status = 'current'",
        "\n        CREATE TABLE journal_draft_source_refs (\n            draft_id TEXT NOT NULL REFERENCES journal_drafts(draft_id),\n            position INTEGER NOT NULL,\n            source_id TEXT NOT NULL,\n            conversation_id TEXT NOT NULL,\n            message_id TEXT NOT NULL,\n            PRIMARY KEY (draft_id, position)\n        )",
        "\n        CREATE TABLE journal_entries (\n            entry_id TEXT PRIMARY KEY,\n            journal_day_id TEXT NOT NULL REFERENCES journal_days(day_id),\n            current_version_id TEXT,\n            created_at REAL NOT NULL,\n            deleted_at REAL\n        )",
        "\n        CREATE UNIQUE INDEX journal_entries_live_per_day ON journal_entries (journal_day_id)\n            WHERE deleted_at IS NULL",
        "\n        CREATE INDEX journal_entries_live ON journal_entries (journal_day_id, entry_id)\n            WHERE deleted_at IS NULL",
        "\n        CREATE TABLE journal_entry_versions (\n            version_id TEXT PRIMARY KEY,\n            entry_id TEXT NOT NULL REFERENCES journal_entries(entry_id),\n            seq INTEGER NOT NULL,\n            origin TEXT NOT NULL CHECK (origin IN ('draft', 'edit', 'restore')),\n            text TEXT NOT NULL,\n            draft_id TEXT,\n            created_at REAL NOT NULL,\n            UNIQUE (entry_id, seq)\n        )",
        "\n        CREATE TABLE journal_entry_version_source_refs (\n            version_id TEXT NOT NULL REFERENCES journal_entry_versions(version_id),\n            position INTEGER NOT NULL,\n            conversation_id TEXT NOT NULL,\n            message_id TEXT NOT NULL,\n            PRIMARY KEY (version_id, position)\n        )",
        "\n        CREATE TABLE journal_jobs (\n            job_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL,\n            calendar_date TEXT NOT NULL,\n            state TEXT NOT NULL\n                CHECK (state IN ('queued', 'reconstruct', 'narrate', 'done', 'failed')),\n            draft_id TEXT,\n            error_code TEXT,\n            error_message TEXT,\n            created_at REAL NOT NULL,\n            updated_at REAL NOT NULL\n        )",
        "\n        CREATE INDEX journal_jobs_open ON journal_jobs (user_id, state)",
        "\n        CREATE INDEX messages_user_lines ON messages (user_id, role, calendar_date)",
        "\n        ",
    ]:
        if statement.strip():
            db.execute(statement)


@migration
def m004_privacy_identities(db: Executes) -> None:
    """The privacy gateway's identity registry (design §7a): the people each user names, in
    the order they were given, and which deprecated sources were imported once."""
    db.execute(
        """
        CREATE TABLE privacy_identities (
            user_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            aliases TEXT NOT NULL DEFAULT '[]',
            updated_at REAL NOT NULL,
            PRIMARY KEY (user_id, position)
        )
        """
    )
    db.execute(
        """
        CREATE TABLE privacy_legacy_imports (
            source TEXT PRIMARY KEY,
            imported_at REAL NOT NULL,
            names INTEGER NOT NULL
        )
        """
    )


@migration
def m005_memories(db: Executes) -> None:
    """Long-term memory (design §3a): what the character knows about its user across days.

    One row per memory of a pair. `memory_id` is the public id; the integer `id` is the FTS
    row id. A corrected memory stays, with `superseded_by` naming its successor; "live"
    memories have none. `source_message_ids` (JSON) names the user messages it came from.
    `memory_triggers` records every promotion trigger consolidated, in the same transaction
    as its memories, so a trigger run again after a crash changes nothing.

    The FTS5 index uses the **trigram** tokenizer (case-insensitive): a word matches inside
    longer words, so "Leipzig" finds "Leipziger" and "Schwester" finds "Zwillingsschwester" —
    what German compounds and inflection need, in English too, without a stemmer per
    language. Query terms shorter than three letters match nothing (the query builder drops
    them). The index is external-content (it stores no second copy of the text); triggers
    keep it in step with the table.
    """
    db.execute(
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            memory_id TEXT NOT NULL UNIQUE,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            text TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN
                ('fact', 'person', 'preference', 'event', 'plan', 'feeling')),
            importance REAL NOT NULL DEFAULT 0.5,
            created_at REAL NOT NULL,
            refreshed_at REAL NOT NULL,
            last_used_at REAL,
            reflected_at REAL,
            source_message_ids TEXT NOT NULL DEFAULT '[]',
            superseded_by TEXT
        )
        """
    )
    db.execute("CREATE INDEX memories_by_pair ON memories (user_id, character_id, created_at)")
    if is_postgres(db):
        # pg_trgm's trigrams under ILIKE: the FTS5 trigram index's behaviour (and, unlike
        # it, terms of one or two letters too).
        db.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        db.execute("CREATE INDEX memories_text_trgm ON memories USING gin (text gin_trgm_ops)")
    else:
        _memories_fts(db)
    db.execute(
        """
        CREATE TABLE memory_triggers (
            trigger_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            consolidated_at REAL NOT NULL
        )
        """
    )


def _memories_fts(db: Executes) -> None:
    db.execute(
        """
        CREATE VIRTUAL TABLE memories_fts USING fts5(
            text, content='memories', content_rowid='id', tokenize='trigram')
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END
        """
    )
    db.execute(
        """
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF text ON memories BEGIN
            INSERT INTO memories_fts (memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO memories_fts (rowid, text) VALUES (new.id, new.text);
        END
        """
    )


PAIR_ROWS = 1 << 32  # row ids one pair of `memories` may use (m007)


@migration
def m006_profile(db: Executes) -> None:
    """The writing profile and the interaction profile (seed 004 §12–§15, issue 16).

    `writing_profiles` holds one current profile per user (core, facets, traits as one JSON
    document, lifecycle, governance); every accepted change appends the whole document to
    `writing_profile_versions`. `writing_profile_evidence` holds local review candidates
    (`ref` names their source once); a review result becomes a proposal whose changes wait in
    `writing_profile_changes` until the user accepts or rejects each one.
    """
    for statement in [
        "\n        CREATE TABLE writing_profiles (\n            user_id TEXT PRIMARY KEY,\n            governance TEXT NOT NULL DEFAULT 'advising'\n                CHECK (governance IN ('learning', 'advising', 'frozen')),\n            lifecycle TEXT NOT NULL DEFAULT 'uninitialized'\n                CHECK (lifecycle IN ('uninitialized', 'initial_pending', 'confirmed')),\n            profile_json TEXT NOT NULL,\n            version_seq INTEGER NOT NULL DEFAULT 0,\n            updated_at REAL NOT NULL\n        )",
        "\n        CREATE TABLE writing_profile_versions (\n            version_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL,\n            seq INTEGER NOT NULL,\n            reason TEXT NOT NULL,\n            profile_json TEXT NOT NULL,\n            created_at REAL NOT NULL,\n            UNIQUE (user_id, seq)\n        )",
        "\n        CREATE TABLE writing_profile_evidence (\n            evidence_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL,\n            signal TEXT NOT NULL CHECK (signal IN ('entry_saved', 'strong_edit', 'dialog_sample')),\n            ref TEXT NOT NULL,\n            text TEXT NOT NULL,\n            occurred_at REAL NOT NULL,\n            context_hint TEXT NOT NULL DEFAULT '',\n            measure_json TEXT NOT NULL DEFAULT '{}',\n            created_at REAL NOT NULL,\n            UNIQUE (user_id, ref)\n        )",
        "\n        CREATE TABLE writing_profile_proposals (\n            proposal_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL,\n            mode TEXT NOT NULL CHECK (mode IN ('initial_build', 'review')),\n            via TEXT NOT NULL CHECK (via IN ('api', 'paste')),\n            summary TEXT NOT NULL DEFAULT '',\n            evidence_basis_json TEXT NOT NULL DEFAULT '[]',\n            unknown_refs_json TEXT NOT NULL DEFAULT '[]',\n            created_at REAL NOT NULL\n        )",
        "\n        CREATE TABLE writing_profile_changes (\n            change_id TEXT PRIMARY KEY,\n            proposal_id TEXT NOT NULL REFERENCES writing_profile_proposals(proposal_id),\n            position INTEGER NOT NULL,\n            change_json TEXT NOT NULL,\n            status TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected', 'applied')),\n            version_seq INTEGER,\n            decided_at REAL,\n            UNIQUE (proposal_id, position)\n        )",
        "\n        CREATE TABLE interaction_profiles (\n            user_id TEXT PRIMARY KEY,\n            governance TEXT NOT NULL DEFAULT 'advising'\n                CHECK (governance IN ('learning', 'advising', 'frozen')),\n            prefs_json TEXT NOT NULL DEFAULT '{}',\n            suggestions_json TEXT NOT NULL DEFAULT '[]',\n            updated_at REAL NOT NULL\n        )\n        ",
    ]:
        if statement.strip():
            db.execute(statement)


def memory_text_key(text: str) -> str:
    """Column `memories.text_key` (m007): the text as duplicates compare — casefolded,
    whitespace and end punctuation ignored."""
    return " ".join(text.casefold().split()).rstrip(".!? ")


@migration
def m007_memories_by_pair(db: Executes) -> None:
    """Long-term memory's row ids grouped by pair, so a search reads only the pair's part of
    the FTS index (design §3a; issue 14's retrieval budget).

    `memory_pairs` numbers every (user, character) pair that has memories; the pair numbered
    n owns the row ids [n·2³², (n+1)·2³²) and its memories are numbered *downward* from the
    top of that range in the order they are written (`app.memory.long_term.insert_memory`).
    The FTS index is ordered by row id, so a search names the pair's id range and FTS5 never
    walks another pair's matches (before: a common word newer in another pair's 10 000
    memories took 30 ms), and "newest first" is the index's forward direction (FTS5 reads a
    doclist backward at about half the speed). Existing memories are renumbered in their
    order and the index is rebuilt from the table.

    `text_key` (`memory_text_key` of the text, indexed per pair) finds a live memory with the
    same text in one index lookup: consolidation's duplicate check, which searched the index
    before.
    """
    db.execute(
        """
        CREATE TABLE memory_pairs (
            pair_no INTEGER PRIMARY KEY,
            user_id TEXT NOT NULL,
            character_id TEXT NOT NULL,
            UNIQUE (user_id, character_id)
        )
        """
    )
    db.execute(
        "INSERT INTO memory_pairs (user_id, character_id) SELECT user_id, character_id "
        "FROM memories GROUP BY user_id, character_id ORDER BY min(id)"
    )
    db.execute(
        f"""
        UPDATE memories SET id = renumbered.new_id FROM (
            SELECT m.id AS old_id, (p.pair_no + 1) * {PAIR_ROWS} - row_number() OVER (
                PARTITION BY m.user_id, m.character_id ORDER BY m.id) AS new_id
            FROM memories m JOIN memory_pairs p
              ON p.user_id = m.user_id AND p.character_id = m.character_id) AS renumbered
        WHERE memories.id = renumbered.old_id
        """
    )
    if not is_postgres(db):
        db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")
    db.execute("ALTER TABLE memories ADD COLUMN text_key TEXT NOT NULL DEFAULT ''")
    db.executemany(
        "UPDATE memories SET text_key = ? WHERE id = ?",
        [
            (memory_text_key(text), rowid)
            for rowid, text in db.execute("SELECT id, text FROM memories").fetchall()
        ],
    )
    db.execute("CREATE INDEX memories_by_text ON memories (user_id, character_id, text_key)")


@migration
def m008_message_history(db: Executes) -> None:
    """The chat page's history (design §5 "The chat page"): the message log paged per pair and
    searched, with the journal's imported conversations beside it.

    - `messages_by_pair` walks one pair's rows in the history's order (calendar day, time,
      row) from any cursor, newest or oldest first, without a sort.
    - `messages.imported_at`: when the row came in through a chat export's import (NULL: it
      was said here), so the page can name where it came from.
    - `messages_fts` and `journal_messages_fts`: FTS5 with the **trigram** tokenizer, as the
      memories' index (`m005_memories`): "Leipzig" finds "Leipziger". `messages_fts` is
      external-content over the log (whose integer `id` is stable); the journal's messages
      have no integer key that survives a VACUUM, so their index keeps its own copy of the
      text with the `message_id`. Triggers keep both in step with their tables; existing
      rows are indexed here.
    """
    db.execute("ALTER TABLE messages ADD COLUMN imported_at REAL")
    db.execute(
        "CREATE INDEX messages_by_pair ON messages "
        "(user_id, character_id, calendar_date, created, id)"
    )
    if is_postgres(db):
        # SQLite's implicit `rowid` of the journal's messages, which the history orders by.
        db.execute(
            "ALTER TABLE journal_messages ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY"
        )
        db.execute("CREATE INDEX messages_text_trgm ON messages USING gin (text gin_trgm_ops)")
        db.execute(
            "CREATE INDEX journal_messages_text_trgm ON journal_messages "
            "USING gin (text gin_trgm_ops)"
        )
        return
    statements = (
        "CREATE VIRTUAL TABLE messages_fts USING fts5("
        "text, content='messages', content_rowid='id', tokenize='trigram')",
        """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
        END""",
        """CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
        END""",
        """CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
            INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
            INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text);
        END""",
        "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')",
        "CREATE VIRTUAL TABLE journal_messages_fts USING fts5("
        "message_id UNINDEXED, text, tokenize='trigram')",
        """CREATE TRIGGER journal_messages_fts_insert AFTER INSERT ON journal_messages BEGIN
            INSERT INTO journal_messages_fts (message_id, text) VALUES (new.message_id, new.text);
        END""",
        """CREATE TRIGGER journal_messages_fts_delete AFTER DELETE ON journal_messages BEGIN
            DELETE FROM journal_messages_fts WHERE message_id = old.message_id;
        END""",
        """CREATE TRIGGER journal_messages_fts_update AFTER UPDATE OF text ON journal_messages
        BEGIN
            UPDATE journal_messages_fts SET text = new.text WHERE message_id = old.message_id;
        END""",
        "INSERT INTO journal_messages_fts (message_id, text) "
        "SELECT message_id, text FROM journal_messages",
    )
    for statement in statements:
        db.execute(statement)


@migration
def m009_journal_marks(db: Executes) -> None:
    """What the journal needs to know about a line and a draft beyond their text (issue 22).

    - `message_actions`: the action mark of a user turn in the message log (the session
      turn's `aktion_erledigt` / `aktion_erfolgreich`, seed 001), written by the dispatcher
      when it commits the mark. The log's rows are never updated and the mark comes after
      the user's row (an agent acts later in the turn), so it is a row of its own; one per
      marked turn, and a later mark of the same turn replaces it (as on the session turn).
    - `journal_draft_source_refs.act`: what a line was, as the draft used it: '' (told),
      'done' (a request the character carried out), 'question' (a question to it).
    - `journal_drafts.base_origin`, `base_id`: the stored text a draft revised when it was
      asked to include the existing one (seed 004 `include_existing`): 'entry' and the
      version id, or 'draft' and the draft id; NULL when it revised nothing.
    """
    for statement in [
        "\n        CREATE TABLE message_actions (\n            user_id TEXT NOT NULL,\n            character_id TEXT NOT NULL,\n            turn_id TEXT NOT NULL,\n            succeeded INTEGER NOT NULL CHECK (succeeded IN (0, 1)),\n            marked_at REAL NOT NULL,\n            PRIMARY KEY (user_id, character_id, turn_id)\n        )",
        "\n        ALTER TABLE journal_draft_source_refs ADD COLUMN act TEXT NOT NULL DEFAULT ''\n            CHECK (act IN ('', 'done', 'question'))",
        "\n        ALTER TABLE journal_drafts ADD COLUMN base_origin TEXT\n            CHECK (base_origin IN ('entry', 'draft'))",
        "\n        ALTER TABLE journal_drafts ADD COLUMN base_id TEXT\n        ",
    ]:
        if statement.strip():
            db.execute(statement)


@migration
def m010_profile_review_privacy(db: Executes) -> None:
    """The writing profile's review as a person uses it (issue 22 §5).

    - `writing_profile_packages`: the placeholder mapping of each masked copy package
      (`[PERSON_1]` → the name), kept on this machine only so that the pasted result's
      placeholders are put back when it is imported; the oldest are dropped.
    - `writing_profile_evidence.signal` gains the save-time triggers of seed 004 §13:
      `deviation` (the local measures of a saved entry differ from the user's usual ones) and
      `periodic` (enough time or entries since the last candidate). SQLite cannot change a
      CHECK, so the table is rebuilt with its rows.
    """
    for statement in [
        "\n        CREATE TABLE writing_profile_packages (\n            package_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL,\n            mapping_json TEXT NOT NULL,\n            created_at REAL NOT NULL\n        )",
        "\n        CREATE INDEX writing_profile_packages_user ON writing_profile_packages (user_id, created_at)",
        "\n        CREATE TABLE writing_profile_evidence_new (\n            evidence_id TEXT PRIMARY KEY,\n            user_id TEXT NOT NULL,\n            signal TEXT NOT NULL CHECK (signal IN ('entry_saved', 'strong_edit', 'dialog_sample',\n                                                   'deviation', 'periodic')),\n            ref TEXT NOT NULL,\n            text TEXT NOT NULL,\n            occurred_at REAL NOT NULL,\n            context_hint TEXT NOT NULL DEFAULT '',\n            measure_json TEXT NOT NULL DEFAULT '{}',\n            created_at REAL NOT NULL,\n            UNIQUE (user_id, ref)\n        )",
        "\n        INSERT INTO writing_profile_evidence_new SELECT evidence_id, user_id, signal, ref, text,\n            occurred_at, context_hint, measure_json, created_at FROM writing_profile_evidence",
        "\n        DROP TABLE writing_profile_evidence",
        "\n        ALTER TABLE writing_profile_evidence_new RENAME TO writing_profile_evidence\n        ",
    ]:
        if statement.strip():
            db.execute(statement)


@migration
def m011_media_assets(db: Executes) -> None:
    """Photos in journal entries (seed 004 `media_assets`: file + kind).

    `file` is the stored image's path relative to the data dir (`media/<user folder>/…`),
    `thumb` its thumbnail's; `kind` the decoded format (`jpeg`, `png`, `webp`, `heic`), never
    the name's extension. `name` is the user's file name, checked (no path parts). A row
    belongs to one entry of its user: it goes with the entry's purge, files included.
    """
    db.execute(
        """
        CREATE TABLE media_assets (
            asset_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            entry_id TEXT NOT NULL REFERENCES journal_entries(entry_id),
            name TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('jpeg', 'png', 'webp', 'heic')),
            file TEXT NOT NULL,
            thumb TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            width INTEGER NOT NULL,
            height INTEGER NOT NULL,
            created_at REAL NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX media_assets_by_entry ON media_assets (entry_id, created_at)")


@migration
def m012_diary_imports(db: Executes) -> None:
    """Diaries the user already had, imported as journal entries (issue 22 §6, seed 004).

    - `journal_entry_versions.origin` may be `import`: the first version of an entry made
      from an imported diary. SQLite cannot change a CHECK in place, so the table is rebuilt
      in this migration's transaction, foreign keys on: its one child, the version source
      refs, is moved aside first (a parent with children cannot be dropped), then the new
      versions table takes the old one's name and the refs come back in their own table.
    - `journal_imports`: one row per imported item (a Day One entry, a Markdown file) under
      its stable key (`dayone:<uuid>`, `markdown:<sha256>`), the entry it went into, its
      original moment and day (in its own time zone), its tags and the photos it named.
      The key makes a second import of the same diary add nothing.

    On PostgreSQL the CHECK is changed in place instead (a table with foreign keys pointing
    at it is not dropped there).
    """
    if is_postgres(db):
        db.execute(
            "ALTER TABLE journal_entry_versions DROP CONSTRAINT journal_entry_versions_origin_check"
        )
        db.execute(
            "ALTER TABLE journal_entry_versions ADD CONSTRAINT "
            "journal_entry_versions_origin_check CHECK (origin IN ('draft', 'edit', "
            "'restore', 'import'))"
        )
        rebuild = ""
    else:
        rebuild = """
        CREATE TABLE journal_entry_versions_m012 (
            version_id TEXT PRIMARY KEY,
            entry_id TEXT NOT NULL REFERENCES journal_entries(entry_id),
            seq INTEGER NOT NULL,
            origin TEXT NOT NULL CHECK (origin IN ('draft', 'edit', 'restore', 'import')),
            text TEXT NOT NULL,
            draft_id TEXT,
            created_at REAL NOT NULL,
            UNIQUE (entry_id, seq)
        );
        INSERT INTO journal_entry_versions_m012 SELECT version_id, entry_id, seq, origin, text,
            draft_id, created_at FROM journal_entry_versions;
        CREATE TABLE journal_refs_m012 AS SELECT version_id, position, conversation_id,
            message_id FROM journal_entry_version_source_refs;
        DROP TABLE journal_entry_version_source_refs;
        DROP TABLE journal_entry_versions;
        ALTER TABLE journal_entry_versions_m012 RENAME TO journal_entry_versions;
        CREATE TABLE journal_entry_version_source_refs (
            version_id TEXT NOT NULL REFERENCES journal_entry_versions(version_id),
            position INTEGER NOT NULL,
            conversation_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (version_id, position)
        );
        INSERT INTO journal_entry_version_source_refs SELECT version_id, position,
            conversation_id, message_id FROM journal_refs_m012;
        DROP TABLE journal_refs_m012;
        """
    for statement in (
        rebuild
        + """
        CREATE TABLE journal_imports (
            space_id TEXT NOT NULL REFERENCES journal_spaces(space_id),
            import_key TEXT NOT NULL,
            entry_id TEXT NOT NULL REFERENCES journal_entries(entry_id),
            source TEXT NOT NULL CHECK (source IN ('dayone', 'markdown')),
            calendar_date TEXT NOT NULL,
            occurred_at REAL NOT NULL,
            tags_json TEXT NOT NULL DEFAULT '[]',
            photos_json TEXT NOT NULL DEFAULT '[]',
            imported_at REAL NOT NULL,
            PRIMARY KEY (space_id, import_key)
        );
        CREATE INDEX journal_imports_by_entry ON journal_imports (entry_id)
        """
    ).split(";"):
        if statement.strip():
            db.execute(statement)


@migration
def m013_shared_store(db: Executes) -> None:
    """What processes sharing one store need (issue 26).

    - `journal_jobs.owner`: the process (its runtime instance id) that runs the job; a start
      fails only the open jobs of processes that are gone, never a live one's. Jobs from
      before have none: their process is gone.
      At most one open job per user also across processes: a partial unique index, so two
      processes starting a job for one user at once get one job and one `journal_busy`.
    - `_install`: the install's identity, one row, made at the first start. The files dir
      (pictures, photos) holds the same id; a store and a files dir of different installs
      refuse to start (`app.storage.install`). Like `_migrations` it belongs to the store,
      not to its contents: a backup does not carry it, a restore keeps the target's.
    """
    db.execute("ALTER TABLE journal_jobs ADD COLUMN owner TEXT")
    db.execute(
        "CREATE UNIQUE INDEX journal_jobs_one_open ON journal_jobs (user_id) "
        "WHERE state IN ('queued', 'reconstruct', 'narrate')"
    )
    db.execute(
        "CREATE TABLE _install (singleton TEXT PRIMARY KEY CHECK (singleton = 'install'), "
        "id TEXT NOT NULL, created_at REAL NOT NULL)"
    )


@migration
def m014_egress_log(db: Executes) -> None:
    """What left this machine (issue 39 item 5): one row per model call the gateway made
    to an endpoint — when, which endpoint (its host, never a credential) and model, what
    for, the tokens both ways, how many identities of each kind the masking replaced, whether
    the egress gate or the reply check refused, and whether the endpoint is remote. Never a
    prompt, an answer, a name or a placeholder mapping (`app.llm.egress_log`)."""
    db.execute(
        """
        CREATE TABLE egress_log (
            call_id TEXT PRIMARY KEY,
            user_id TEXT NOT NULL,
            at REAL NOT NULL,
            calendar_date TEXT NOT NULL,
            purpose TEXT NOT NULL,
            provider TEXT NOT NULL,
            endpoint TEXT NOT NULL,
            model TEXT,
            remote INTEGER NOT NULL CHECK (remote IN (0, 1)),
            tokens_in INTEGER,
            tokens_out INTEGER,
            masked_json TEXT NOT NULL DEFAULT '{}',
            refused TEXT CHECK (refused IN ('gate', 'reply')),
            outcome TEXT NOT NULL,
            error_code TEXT
        )
        """
    )
    db.execute("CREATE INDEX egress_log_by_day ON egress_log (user_id, calendar_date, at)")


@migration
def m015_journal_provenance(db: Executes) -> None:
    """The narration checked against the day's lines, and where each sentence came from
    (issue 40).

    - `journal_drafts.support_json`: `{"sentences": [{text, sources}], "left_out": [{text,
      sources, unsupported}]}` — each sentence of the draft with the source ids (`u1`, …,
      `base`) of the lines it drew on, and the model's sentences left out of the draft
      because no line holds what they assert. `'{}'`: a draft from before.
    - `journal_entry_versions.provenance_json`: the same map for a version's text, each
      sentence `{text, sources, origin, draft_id}` — `draft` (as the draft `draft_id` had
      it, with its source ids) or `edit` (the user's own words: not in the draft it came
      from). `'[]'`: no map (a version from before, an import; `support.VersionSentence`).
    """
    db.execute("ALTER TABLE journal_drafts ADD COLUMN support_json TEXT NOT NULL DEFAULT '{}'")
    db.execute(
        "ALTER TABLE journal_entry_versions ADD COLUMN provenance_json TEXT NOT NULL DEFAULT '[]'"
    )
