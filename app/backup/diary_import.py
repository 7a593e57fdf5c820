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
  `attach_photos` after the commit, which adds each file of the zip to its entry through
  the media module (issue 22 §4). One it refuses (its kind, its size), or one the archive
  does not hold, is named in the answer with the reason and fails nothing. A re-import adds
  no photo twice: an item imported before is skipped with its photos.

The writing profile's bootstrap reads these entries as `external_context` of the facet
`autobiographical_journal` (`app.profiles.writing.corpus`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import msgspec

from app.backup.diary_formats import Diary, DiaryItem, PhotoRef, photo_files, read_photo
from app.backup.exports import ExportError, ImportTarget
from app.core.i18n import texts
from app.core.log import fields
from app.core.refusal import RefusedKind
from app.journal.media import MediaRefused, declared_cost
from app.journal.rows import append_version, ensure_day, ensure_space, new_id
from app.storage.connection import Connection

ITEM_BREAK = "\n\n* * *\n\n"
NOT_IN_ARCHIVE = "not_in_archive"  # why a photo was not stored: the export holds no file
# What decoding an import's photos may cost in all, read from their headers before anything
# is written (a zip of tiny files whose headers declare huge pictures is refused whole): a
# floor any small import has, and beyond it an allowance by the archive's bytes — a real photo
# packs a few pixels into a byte (a 12 MP JPEG: 3 MB), a bomb millions.
IMPORT_FLOOR_PIXELS = 200_000_000  # five photos at the largest `MAX_PIXELS` allows
IMPORT_PIXELS_PER_BYTE = 16
IMPORT_FLOOR_DECODED_BYTES = 4 * IMPORT_FLOOR_PIXELS  # RGBA at 8 bits
IMPORT_DECODED_BYTES_PER_BYTE = 4 * IMPORT_PIXELS_PER_BYTE
IMPORT_PHOTO_SECONDS = 300  # wall time for adding an import's photos; the rest are not added
OVER_TIME = "import_time_budget"  # why a photo was not stored: the import's time ran out
# Adds a photo to an entry: (entry_id, name, data) → the stored asset; `MediaRefused` when
# the media module does not take it (`MediaStore.add_media` bound to the user, or
# `add_media_sync` on the importer's connection).
AddPhoto = Callable[[str, str, bytes], Awaitable[object]]

log = logging.getLogger(__name__)


class ImportTooLarge(RefusedKind):
    """An import whose photos would cost more to decode than its budget: 413
    `import_too_large`, the budget named; nothing was written. A `Refused` kind the API's
    error middleware answers as it is (no `ExportError`, which the route answers as
    `invalid_diary`); the CLI names it as refused."""

    STATUS, CODE = 413, "import_too_large"


@dataclass(frozen=True, slots=True)
class PhotoCost:
    photos: int
    pixels: int
    decoded_bytes: int


def check_photo_budget(diary: Diary, user_id: str = "") -> PhotoCost:
    """What the diary's photos declare (headers read, nothing decoded), within the import's
    budget by its archive's size; else `ImportTooLarge`, before anything is written."""
    photos = pixels = decoded = 0
    for _, data in photo_files(diary):
        count, size = declared_cost(data)
        photos, pixels, decoded = photos + 1, pixels + count, decoded + size
    archive = len(diary.archive or b"")
    allowed_pixels = max(IMPORT_FLOOR_PIXELS, IMPORT_PIXELS_PER_BYTE * archive)
    allowed_bytes = max(IMPORT_FLOOR_DECODED_BYTES, IMPORT_DECODED_BYTES_PER_BYTE * archive)
    over = []
    if pixels > allowed_pixels:
        over.append(f"{pixels} pixels (at most {allowed_pixels})")
    if decoded > allowed_bytes:
        over.append(f"{decoded} decoded bytes (at most {allowed_bytes})")
    if over:
        log.warning(
            "diary import refused: photos over the budget",
            extra=fields(
                user_id=user_id,
                photos=photos,
                pixels=pixels,
                decoded_bytes=decoded,
                archive_bytes=archive,
                limit_pixels=allowed_pixels,
                limit_decoded_bytes=allowed_bytes,
            ),
        )
        raise ImportTooLarge(
            f"the {photos} photos of this {archive}-byte archive declare "
            f"{' and '.join(over)}: an import's photos may hold {IMPORT_PIXELS_PER_BYTE} "
            f"pixels per byte of its archive (at least {IMPORT_FLOOR_PIXELS}); nothing was "
            "imported"
        )
    return PhotoCost(photos, pixels, decoded)


@dataclass(frozen=True, slots=True)
class ImportedEntry:
    entry_id: str
    date: str
    items: int
    photos: tuple[PhotoRef, ...]


class PhotoItem(msgspec.Struct, frozen=True):
    """A photo of an imported entry and what became of it (field order: the answer's key
    order): stored (`asset_id`), or not, with its reason (a media refusal's code and
    message, `not_in_archive`, `import_time_budget`)."""

    entry_id: str
    date: str
    identifier: str
    md5: str
    type: str
    in_archive: bool
    name: str  # as stored: the archive's file name
    imported: bool = False
    reason: str | msgspec.UnsetType = msgspec.UNSET
    message: str | msgspec.UnsetType = msgspec.UNSET
    asset_id: str | msgspec.UnsetType | None = msgspec.UNSET


class PhotosAnswer(msgspec.Struct, frozen=True):
    found: int
    imported: int
    not_imported: int
    items: list[PhotoItem]


class EntryAnswer(msgspec.Struct, frozen=True):
    entry_id: str
    date: str
    items: int  # the diary's items the entry was made of


class DiaryAnswer(msgspec.Struct, frozen=True):
    """A diary import's answer (`POST /api/journal/import/diary`; field order: its keys)."""

    kind: str  # `diary.<source>`
    source: str
    items: int
    imported: int
    skipped: int
    day_has_entry: list[str]
    entries: list[EntryAnswer]
    photos: PhotosAnswer
    notes: list[str]


@dataclass(slots=True)
class PhotoReport:
    found: int = 0
    imported: int = 0
    items: list[PhotoItem] = field(default_factory=list)

    @property
    def not_imported(self) -> int:
        return self.found - self.imported

    def answer(self) -> PhotosAnswer:
        return PhotosAnswer(self.found, self.imported, self.not_imported, list(self.items))


@dataclass(slots=True)
class DiaryResult:
    source: str
    items: int
    imported: int = 0  # items that became (part of) a new entry
    skipped: int = 0  # items imported before
    day_has_entry: list[str] = field(default_factory=list)  # days whose items were not taken
    entries: list[ImportedEntry] = field(default_factory=list)
    photos: PhotoReport = field(default_factory=PhotoReport)

    def answer(self, language: str = "en") -> DiaryAnswer:
        return DiaryAnswer(
            kind=f"diary.{self.source}",
            source=self.source,
            items=self.items,
            imported=self.imported,
            skipped=self.skipped,
            day_has_entry=list(self.day_has_entry),
            entries=[EntryAnswer(e.entry_id, e.date, e.items) for e in self.entries],
            photos=self.photos.answer(),
            notes=self.notes(language),
        )

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
            raise ExportError(
                f"{items[0].where}: the entry of {date} would have {length} "
                f"characters; at most {max_chars} (setting max_message_chars)"
            )


def import_diary(
    conn: Connection, target: ImportTarget, diary: Diary, *, max_chars: int
) -> DiaryResult:
    """Write the diary's new items as entries (in the caller's transaction)."""
    check_diary(diary, max_chars)
    space_id = ensure_space(conn, target.user_id)
    done = {
        row[0]
        for row in conn.execute(
            "SELECT import_key FROM journal_imports WHERE space_id = ?", (space_id,)
        )
    }
    result = DiaryResult(diary.source, len(diary.items))
    now = time.time()
    for date, items in _by_day(diary.items).items():
        fresh = [item for item in items if item.key not in done]
        result.skipped += len(items) - len(fresh)
        if not fresh:
            continue
        day_id = ensure_day(conn, target.user_id, date)
        if conn.execute(
            "SELECT 1 FROM journal_entries WHERE journal_day_id = ? AND deleted_at IS NULL",
            (day_id,),
        ).fetchone():
            result.day_has_entry.append(date)
            continue
        entry_id = new_id("entry")
        conn.execute(
            "INSERT INTO journal_entries (entry_id, journal_day_id, created_at) VALUES (?, ?, ?)",
            (entry_id, day_id, now),
        )
        append_version(conn, entry_id, "import", entry_text(fresh), ())
        conn.executemany(
            "INSERT INTO journal_imports (space_id, import_key, entry_id, source, "
            "calendar_date, occurred_at, tags_json, photos_json, imported_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    space_id,
                    item.key,
                    entry_id,
                    diary.source,
                    date,
                    item.occurred_at,
                    json.dumps(item.tags, ensure_ascii=False),
                    json.dumps([p.as_dict() for p in item.photos]),
                    now,
                )
                for item in fresh
            ],
        )
        done.update(item.key for item in fresh)
        result.imported += len(fresh)
        result.entries.append(
            ImportedEntry(
                entry_id, date, len(fresh), tuple(photo for item in fresh for photo in item.photos)
            )
        )
    return result


async def attach_photos(result: DiaryResult, diary: Diary, add: AddPhoto) -> PhotoReport:
    """The photos of the entries just imported, after the commit, each file of the archive
    handed to the media module (`add`), named as in the archive (`photos/<md5>.jpeg`'s
    name). One it refuses is reported by name with its reason (`too_large`,
    `not_an_image`, …) and fails nothing; one the archive does not hold: `not_in_archive`;
    one reached after `IMPORT_PHOTO_SECONDS`: `import_time_budget` (the headers' budget,
    `check_photo_budget`, was checked before the import)."""
    report = PhotoReport()
    deadline = time.monotonic() + IMPORT_PHOTO_SECONDS
    for entry in result.entries:
        for photo in entry.photos:
            report.found += 1
            name = (
                PurePosixPath(photo.member).name
                if photo.member
                else f"{photo.identifier}.{photo.type}"
            )
            found = PhotoItem(
                entry_id=entry.entry_id,
                date=entry.date,
                identifier=photo.identifier,
                md5=photo.md5,
                type=photo.type,
                in_archive=photo.member is not None,
                name=name,
            )
            if time.monotonic() > deadline:
                report.items.append(msgspec.structs.replace(found, reason=OVER_TIME))
                continue
            data = await asyncio.to_thread(read_photo, diary, photo)
            if data is None:
                found = msgspec.structs.replace(found, reason=NOT_IN_ARCHIVE)
            else:
                try:
                    asset = await add(entry.entry_id, name, data)
                except MediaRefused as exc:
                    found = msgspec.structs.replace(found, reason=exc.code, message=exc.message)
                else:
                    found = msgspec.structs.replace(
                        found, imported=True, asset_id=getattr(asset, "asset_id", None)
                    )
                    report.imported += 1
            report.items.append(found)
    result.photos = report
    return report


def _by_day(items: Sequence[DiaryItem]) -> dict[str, list[DiaryItem]]:
    days: dict[str, list[DiaryItem]] = {}
    for item in items:
        days.setdefault(item.date, []).append(item)
    return dict(sorted(days.items()))
