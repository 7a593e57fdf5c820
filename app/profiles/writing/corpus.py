"""The user's own texts as the profile sees them (read-only over the journal's tables and the
message log; seed 004 §12–§14).

- *Voiced entries*: live journal entries whose current text the user wrote or changed. An
  entry saved unchanged from a generated draft is not the user's voice and never a style
  source.
- *Imported diary entries* (Day One, Markdown; `journal_imports`): the user's own writing
  from before Novaberg, read as `external_context` (seed 004 §15: external provenance such
  as `dayone_export` is context, not a Novaberg source) of the facet
  `autobiographical_journal` (§14: holiday diaries map to it), dated when they were written.
- *Dialog samples*: long user messages from the chat log and from imported conversations.
  Dialog is a weaker voice and drops out as soon as voiced entries exist.

Every text carries where it came from (`ref`), when it was written (`occurred_at`) and a
`context_hint`.
"""

from __future__ import annotations

import difflib
import sqlite3
from collections.abc import Collection
from dataclasses import dataclass

from app.profiles.writing.model import JOURNAL_FACET

EXTERNAL_CONTEXT = "external_context"  # the kind of an imported diary's entry
SOURCE_NAMES = {"dayone": "Day One", "markdown": "Markdown"}


@dataclass(frozen=True, slots=True)
class CorpusText:
    ref: str
    kind: str  # "entry" | "external_context" (an imported diary's) | "dialog"
    text: str
    occurred_at: float
    context_hint: str
    edit_share: float | None = None  # for an entry made from a draft: how much the user changed
    date: str = ""  # the calendar day of an entry
    facet: str | None = None  # the facet the text speaks for (an imported diary's: the journal)


def edit_share(draft: str, final: str) -> float:
    """The share of the text the user changed, by words (0 = unchanged, 1 = all new); a
    measure, not an exact diff (words, not characters, keep it fast on long entries)."""
    if draft == final:
        return 0.0
    return round(1.0 - difflib.SequenceMatcher(None, draft.split(), final.split()).ratio(), 3)


def voiced_entries(
    conn: sqlite3.Connection,
    user_id: str,
    limit: int | None = None,
    measure: bool = False,
    measured: Collection[str] = (),
    entry_id: str | None = None,
) -> list[CorpusText]:
    """The user's live entries in their current version, newest day first, without those
    saved unchanged from a draft; at most `limit`; only `entry_id` where it is given. An
    imported diary's entry is of kind `external_context`, dated when it was written, for the
    facet `autobiographical_journal`. With `measure`, each entry made from a draft says how
    much of it the user changed (`edit_share`, against the draft it last took over), except
    those whose ref is in
    `measured` (already known)."""
    found: list[CorpusText] = []
    for row in conn.execute(
        "SELECT e.entry_id, d.calendar_date, v.version_id, v.origin, v.text, v.created_at, "
        "r.text AS draft_text, i.source AS imported_from, i.occurred_at AS written_at "
        "FROM journal_entries e "
        "JOIN journal_days d ON d.day_id = e.journal_day_id "
        "JOIN journal_spaces s ON s.space_id = d.space_id "
        "JOIN journal_entry_versions v ON v.version_id = e.current_version_id "
        "LEFT JOIN journal_drafts r ON r.draft_id = (SELECT draft_id FROM "
        "journal_entry_versions WHERE entry_id = e.entry_id AND draft_id IS NOT NULL "
        "AND seq <= v.seq ORDER BY seq DESC LIMIT 1) "
        "LEFT JOIN (SELECT entry_id, MIN(source) AS source, MIN(occurred_at) AS occurred_at "
        "FROM journal_imports GROUP BY entry_id) i ON i.entry_id = e.entry_id "
        "WHERE s.user_id = ? AND e.deleted_at IS NULL AND (CAST(? AS TEXT) IS NULL OR e.entry_id = ?) "
        "ORDER BY d.calendar_date DESC",
        (user_id, entry_id, entry_id),
    ):
        draft = row["draft_text"]
        if draft is not None and draft == row["text"]:
            continue  # an unedited draft: not the user's voice
        ref = f"entry:{row['entry_id']}:{row['version_id']}"
        share = (
            edit_share(draft, row["text"])
            if draft is not None and measure and ref not in measured
            else None
        )
        if row["imported_from"] is not None:
            found.append(
                CorpusText(
                    ref,
                    EXTERNAL_CONTEXT,
                    row["text"],
                    row["written_at"],
                    f"{SOURCE_NAMES[row['imported_from']]} diary entry of {row['calendar_date']} "
                    "(imported)",
                    None,
                    row["calendar_date"],
                    JOURNAL_FACET,
                )
            )
        else:
            found.append(
                CorpusText(
                    ref,
                    "entry",
                    row["text"],
                    row["created_at"],
                    f"journal entry of {row['calendar_date']}",
                    share,
                    row["calendar_date"],
                )
            )
        if limit is not None and len(found) >= limit:
            break
    return found


def dialog_samples(
    conn: sqlite3.Connection, user_id: str, *, min_chars: int, cooldown: float
) -> list[CorpusText]:
    """Long user messages of the chat log and of imported conversations, at most one per
    `cooldown` seconds, newest first."""
    rows = [
        (
            r["created"],
            f"message:{r['id']}",
            r["text"],
            f"chat with {r['character_id']} on {r['calendar_date']}",
        )
        for r in conn.execute(
            "SELECT id, character_id, text, created, calendar_date FROM messages "
            "WHERE user_id = ? AND role = 'user' AND length(text) >= ?",
            (user_id, min_chars),
        )
    ]
    rows += [
        (
            r["at"] if r["at"] is not None else r["created_at"],
            f"message:{r['message_id']}",
            r["text"],
            f"imported conversation of {r['calendar_date']}",
        )
        for r in conn.execute(
            "SELECT m.message_id, m.text, m.at, c.created_at, d.calendar_date "
            "FROM journal_messages m "
            "JOIN journal_conversations c ON c.conversation_id = m.conversation_id "
            "JOIN journal_days d ON d.day_id = c.journal_day_id "
            "JOIN journal_spaces s ON s.space_id = d.space_id "
            "WHERE s.user_id = ? AND m.role = 'user' AND length(m.text) >= ?",
            (user_id, min_chars),
        )
    ]
    picked: list[CorpusText] = []
    last: float | None = None
    for created, ref, text, hint in sorted(rows):
        if last is not None and created - last < cooldown:
            continue
        last = created
        picked.append(CorpusText(ref, "dialog", text, created, hint))
    picked.reverse()
    return picked


def user_voice(
    conn: sqlite3.Connection,
    user_id: str,
    *,
    min_chars: int,
    cooldown: float,
    measure: bool = False,
    measured: Collection[str] = (),
) -> list[CorpusText]:
    """The voice to learn from: the voiced entries, or (only while there are none) dialog
    samples."""
    entries = voiced_entries(conn, user_id, measure=measure, measured=measured)
    return entries or dialog_samples(conn, user_id, min_chars=min_chars, cooldown=cooldown)
