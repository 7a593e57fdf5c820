"""Importing a diary the user already has as journal entries (issue 22 §6, seed 004): what
`app.backup.diary_formats` read becomes entries, all in the one transaction of the
connection given (nothing is written when anything is refused).

- A journal day has one entry (`journal_entries_live_per_day`), so the items of one day
  (two Day One entries of the same day, two Markdown files of it) become one entry, joined
  in time order (`ITEM_BREAK` between them). The entry's version 1 has origin `import`
  and no source refs; the day is the item's own (its time zone's).
- The schema has no place for tags: they stand in the body, a last line `Tags: a, b` under
  the item's text (and are kept with the import's record, `journal_imports.tags_json`).
- Idempotent by each item's stable key (`journal_imports`): an item imported before is
  skipped. An item for a day that has an entry already (written here, or imported from
  something else) is not merged into it: it is skipped and its day named (`day_has_entry`),
  so nothing the user wrote is changed behind their back.
- Photos (Day One `photos[]`) are recorded with the item (`photos_json`) and handed to
  `attach_photos` after the commit, which today stores none: the media module (issue 22 §4)
  is not here yet. The answer says how many were not imported.

The writing profile's bootstrap reads these entries as `external_context` of the facet
`autobiographical_journal` (`app.journal.profile.corpus`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.backup.diary_formats import Diary, DiaryItem, PhotoRef
from app.backup.exports import ExportError, ImportTarget
from app.core.i18n import texts
from app.journal.rows import append_version, ensure_day, ensure_space, new_id

ITEM_BREAK = "\n\n* * *\n\n"
PHOTOS_NOT_IMPORTED = "media_not_available"  # why a photo was not stored (no media module yet)


@dataclass(frozen=True, slots=True)
class ImportedEntry:
    entry_id: str
    date: str
    items: int
    photos: tuple[PhotoRef, ...]


@dataclass(slots=True)
class PhotoReport:
    found: int = 0
    imported: int = 0
    items: list[dict[str, Any]] = field(default_factory=list)

    @property
    def not_imported(self) -> int:
        return self.found - self.imported

    def as_dict(self) -> dict[str, Any]:
        return {"found": self.found, "imported": self.imported,
                "not_imported": self.not_imported, "items": self.items}


@dataclass(slots=True)
class DiaryResult:
    source: str
    items: int
    imported: int = 0  # items that became (part of) a new entry
    skipped: int = 0  # items imported before
    day_has_entry: list[str] = field(default_factory=list)  # days whose items were not taken
    entries: list[ImportedEntry] = field(default_factory=list)
    photos: PhotoReport = field(default_factory=PhotoReport)

    def as_dict(self, language: str = "en") -> dict[str, Any]:
        return {"kind": f"diary.{self.source}", "source": self.source, "items": self.items,
                "imported": self.imported, "skipped": self.skipped,
                "day_has_entry": self.day_has_entry,
                "entries": [{"entry_id": e.entry_id, "date": e.date, "items": e.items}
                            for e in self.entries],
                "photos": self.photos.as_dict(), "notes": self.notes(language)}

    def notes(self, language: str) -> list[str]:
        """What the user should know beyond the counts, in their language."""
        words = texts("diary_import", language)
        notes = []
        if self.photos.not_imported:
            key = "photo_not_imported" if self.photos.not_imported == 1 else "photos_not_imported"
            notes.append(words[key].format(count=self.photos.not_imported))
        if self.day_has_entry:
            notes.append(words["day_has_entry"].format(days=", ".join(self.day_has_entry)))
        return notes


def entry_text(items: Sequence[DiaryItem], tag_label: str = "Tags") -> str:
    """The body of one day's entry: its items in time order (items of the same moment, such
    as Markdown files of one day, in the order given: by file name), each with its tags."""
    parts = []
    for item in sorted(items, key=lambda i: i.occurred_at):
        tags = f"\n\n{tag_label}: {', '.join(item.tags)}" if item.tags else ""
        parts.append(item.text + tags)
    return ITEM_BREAK.join(parts)


def check_diary(diary: Diary, max_chars: int) -> None:
    """No item twice (by its key), and every day's entry fits the journal's limit
    (`max_message_chars`): else refused with the first bad item named, before anything is
    written."""
    seen: dict[str, str] = {}
    for item in diary.items:
        if item.key in seen:
            raise ExportError(f"{item.where}: the same entry as {seen[item.key]}")
        seen[item.key] = item.where
    for date, items in _by_day(diary.items).items():
        length = len(entry_text(items))
        if length > max_chars:
            raise ExportError(f"{items[0].where}: the entry of {date} would have {length} "
                              f"characters; at most {max_chars} (setting max_message_chars)")


def import_diary(conn: sqlite3.Connection, target: ImportTarget, diary: Diary, *,
                 max_chars: int) -> DiaryResult:
    """Write the diary's new items as entries (in the caller's transaction)."""
    check_diary(diary, max_chars)
    space_id = ensure_space(conn, target.user_id)
    done = {row[0] for row in conn.execute(
        "SELECT import_key FROM journal_imports WHERE space_id = ?", (space_id,))}
    result = DiaryResult(diary.source, len(diary.items))
    now = time.time()
    for date, items in _by_day(diary.items).items():
        fresh = [item for item in items if item.key not in done]
        result.skipped += len(items) - len(fresh)
        if not fresh:
            continue
        day_id = ensure_day(conn, target.user_id, date)
        if conn.execute("SELECT 1 FROM journal_entries WHERE journal_day_id = ? AND "
                        "deleted_at IS NULL", (day_id,)).fetchone():
            result.day_has_entry.append(date)
            continue
        entry_id = new_id("entry")
        conn.execute("INSERT INTO journal_entries (entry_id, journal_day_id, created_at) "
                     "VALUES (?, ?, ?)", (entry_id, day_id, now))
        append_version(conn, entry_id, "import", entry_text(fresh), ())
        conn.executemany(
            "INSERT INTO journal_imports (space_id, import_key, entry_id, source, "
            "calendar_date, occurred_at, tags_json, photos_json, imported_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(space_id, item.key, entry_id, diary.source, date, item.occurred_at,
              json.dumps(item.tags, ensure_ascii=False),
              json.dumps([p.as_dict() for p in item.photos]), now) for item in fresh])
        done.update(item.key for item in fresh)
        result.imported += len(fresh)
        result.entries.append(ImportedEntry(entry_id, date, len(fresh), tuple(
            photo for item in fresh for photo in item.photos)))
    return result


def attach_photos(user_id: str, result: DiaryResult, diary: Diary) -> PhotoReport:
    """The photos of the entries just imported, after the commit: the one place that will
    hand them to the media module (issue 22 §4, `add_media(user_id, entry_id, name, data)`
    with `diary_formats.read_photo(diary, photo)`). Until that module is merged it stores
    none and records each as found and not imported (`media_not_available`), which the
    import's answer says ("3 photos not imported")."""
    report = PhotoReport()
    for entry in result.entries:
        for photo in entry.photos:
            report.found += 1
            report.items.append({"entry_id": entry.entry_id, "date": entry.date,
                                 **photo.as_dict(), "imported": False,
                                 "reason": PHOTOS_NOT_IMPORTED})
    result.photos = report
    return report


def _by_day(items: Sequence[DiaryItem]) -> dict[str, list[DiaryItem]]:
    days: dict[str, list[DiaryItem]] = {}
    for item in items:
        days.setdefault(item.date, []).append(item)
    return dict(sorted(days.items()))
