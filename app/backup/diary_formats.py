"""Reading a diary the user already has (issue 22 §6): Day One's JSON export (the file, or
the zip Day One writes: `<Journal>.json` and `photos/`) and a folder of Markdown files, one
per day (a zip of it, a folder on disk, or one file). Pure: bytes in, `Diary` out; what is
written is `app.backup.diary_import`'s.

Every item is checked before anything is written; the first bad one is named by its place
and, where it can be read, its day (`entries[3] (2025-03-14): timeZone 'Mars/Base' is not a
time zone`) in an `ExportError`. Each item has a stable key — Day One's `uuid`, or the
Markdown file's date and text — so a second import of the same diary adds nothing.

Day One: `creationDate` (ISO 8601 with offset, `Z`) is read in the entry's own `timeZone`
(the user's zone where it has none) and gives the entry's day; `text` is Day One's Markdown,
whose backslash escapes (`\\.`, `\\!`, `\\-`) are undone; `tags` are kept; `photos`
(`identifier`, `md5`, `type`) are checked (every `![](dayone-moment://ID)` link of the text
names one of the entry's photos; in a zip, a photo's file `photos/<md5>.<type>`, where
present, has that md5) and kept as `PhotoRef`s.

Markdown: the day comes from front matter `date:` or else the file name (`2025-03-14.md`,
`2025-03-14 Wanderung.md`); front matter `tags:` (`[a, b]`, `a, b` or a `- a` list) and
`title:` (the text's heading) are read, other keys are ignored.

Archives are read in memory, never extracted: a member name that is absolute or climbs out
(`..`), too many members, more unpacked bytes than allowed, or a member that packs more than
`MAX_RATIO` times are refused before anything is unpacked.

One module: the two diary formats share the item, the limits and the zip and folder readers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import logging
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import msgspec

from app.backup.exports import ExportError
from app.core import json_input
from app.core.clock import calendar_date, read_date, read_moment
from app.core.log import fields
from app.core.text import is_blank

log = logging.getLogger(__name__)
Source = Literal["dayone", "markdown"]
MAX_MEMBERS = 20_000  # entries of an archive (a Day One zip holds one file per photo)
MAX_RATIO = 200  # unpacked / packed for one member: beyond is a zip bomb, not a diary
MAX_TAGS, MAX_TAG_CHARS = 100, 200
MARKDOWN_SUFFIXES = (".md", ".markdown")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark's backslash escapes, as Day One writes
_MOMENT_LINK = re.compile(r"!\[[^\]]*\]\(dayone-moment://([^)\s]+)\)")
_IDENTIFIER = re.compile(r"[A-Za-z0-9_-]{1,128}", re.ASCII)
_MD5 = re.compile(r"[0-9a-fA-F]{32}", re.ASCII)
_PHOTO_TYPE = re.compile(r"[a-z0-9]{1,10}", re.ASCII)
_NAME_DATE = re.compile(r"(\d{4}-\d{2}-\d{2})(?![0-9])", re.ASCII)


@dataclass(frozen=True, slots=True)
class PhotoRef:
    """A photo an imported entry names (Day One `photos[]`): where its file is in the
    archive (`member`, None: not in it)."""

    identifier: str
    md5: str
    type: str
    member: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "identifier": self.identifier,
            "md5": self.md5,
            "type": self.type,
            "in_archive": self.member is not None,
        }


@dataclass(frozen=True, slots=True)
class DiaryItem:
    key: str  # stable across imports: "dayone:<uuid>", "markdown:<sha256>"
    where: str  # how an error names it: "entries[3] (2025-03-14)", "2025-03-14.md"
    date: str  # the day, in the item's own time zone
    occurred_at: float
    text: str
    tags: tuple[str, ...] = ()
    photos: tuple[PhotoRef, ...] = ()


@dataclass(slots=True)
class Diary:
    source: Source
    items: list[DiaryItem]
    archive: bytes | None = None  # the zip the photos are in, for `PhotoRef.member`
    members: Mapping[str, int] = field(default_factory=dict)  # its names → unpacked bytes


@dataclass(frozen=True, slots=True)
class Limits:
    """How much an import may unpack (`import_max_bytes`) and the zone of an item that
    names none (the `timezone` setting)."""

    max_bytes: int
    zone: dt.tzinfo | None = None


# --- Day One ------------------------------------------------------------------------------------


class DayOnePhoto(msgspec.Struct):
    identifier: str
    md5: str
    type: str = "jpeg"


class DayOneEntry(msgspec.Struct, rename="camel"):
    creation_date: str
    text: str = ""
    uuid: str | None = None
    time_zone: str | None = None
    tags: list[str] = []
    photos: list[DayOnePhoto] = []


class DayOneExport(msgspec.Struct):
    entries: list[msgspec.Raw]


def read_dayone(
    raw: bytes, limits: Limits, photo_files: Mapping[str, str] | None = None, name: str = ""
) -> list[DiaryItem]:
    """The entries of one Day One JSON export. `photo_files`: md5 → member name of the photo
    files in the archive it came in (None: a bare JSON file)."""
    prefix = f"{name}: " if name else ""
    try:
        # Each entry is checked for U+0000 as it is decoded, so the answer names it.
        document = json_input.decode(raw, DayOneExport, check_nul=False)
    except json_input.JsonInputError as exc:
        raise ExportError(f"{prefix}not a Day One export: {exc}") from None
    if not document.entries:
        raise ExportError(f"{prefix}the Day One export has no entries")
    return [
        _dayone_item(entry, index, limits, photo_files, prefix)
        for index, entry in enumerate(document.entries)
    ]


def _dayone_item(
    raw: msgspec.Raw, index: int, limits: Limits, photo_files: Mapping[str, str] | None, prefix: str
) -> DiaryItem:
    where = f"{prefix}entries[{index}]"
    try:
        entry = json_input.decode(raw, DayOneEntry)
    except json_input.JsonInputError as exc:
        raise ExportError(f"{where}: {exc}") from None
    try:
        moment = read_moment(entry.creation_date)
    except ValueError as exc:
        raise ExportError(f"{where}: creationDate {exc}") from None
    zone = limits.zone
    if entry.time_zone:
        try:
            zone = ZoneInfo(entry.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ExportError(
                f"{where}: timeZone {entry.time_zone[:64]!r} is not a time zone"
            ) from None
    date = calendar_date(moment, zone)
    where = f"{where} ({date})"
    photos = tuple(_photo(p, i, where, photo_files) for i, p in enumerate(entry.photos))
    known = {p.identifier for p in photos}
    for linked in _MOMENT_LINK.findall(entry.text):
        if linked not in known:
            raise ExportError(
                f"{where}: the text links photo {linked[:64]!r}, which is not "
                "among the entry's photos"
            )
    text = unescape(entry.text).strip()
    if is_blank(text) and not photos:
        raise ExportError(f"{where}: the entry has no text")
    tags = _tags(entry.tags, where)
    key = (
        entry.uuid.strip()
        if entry.uuid and entry.uuid.strip()
        else _digest(entry.creation_date, entry.text)
    )
    return DiaryItem(f"dayone:{key[:128]}", where, date, moment, text, tags, photos)


def _photo(
    photo: DayOnePhoto, index: int, where: str, photo_files: Mapping[str, str] | None
) -> PhotoRef:
    at = f"{where}: photos[{index}]"
    if not _IDENTIFIER.fullmatch(photo.identifier):
        raise ExportError(f"{at}: identifier {photo.identifier[:64]!r} is not a Day One id")
    if not _MD5.fullmatch(photo.md5):
        raise ExportError(f"{at}: md5 {photo.md5[:64]!r} is not an MD5 checksum")
    kind = photo.type.lower()
    if not _PHOTO_TYPE.fullmatch(kind):
        raise ExportError(f"{at}: type {photo.type[:20]!r} is not a file type")
    md5 = photo.md5.lower()
    member = photo_files.get(md5) if photo_files is not None else None
    return PhotoRef(photo.identifier, md5, kind, member)


def unescape(text: str) -> str:
    """Day One's Markdown as the user wrote it: backslash escapes undone (outside the photo
    links, which stay as they are for the media import to find)."""
    parts, last = [], 0
    for link in _MOMENT_LINK.finditer(text):
        parts.append(_ESCAPED.sub(r"\1", text[last : link.start()]))
        parts.append(link.group(0))
        last = link.end()
    parts.append(_ESCAPED.sub(r"\1", text[last:]))
    return "".join(parts)


# --- Markdown -----------------------------------------------------------------------------------


def read_markdown(files: Iterable[tuple[str, bytes]], limits: Limits) -> list[DiaryItem]:
    """One item per Markdown file (`name`, bytes), in name order."""
    items = [_markdown_item(name, raw, limits) for name, raw in sorted(files)]
    if not items:
        raise ExportError("no Markdown files (.md) found")
    return items


def _markdown_item(name: str, raw: bytes, limits: Limits) -> DiaryItem:
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExportError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    if "\x00" in content:  # as a JSON text with one is refused (json_input.HasNul)
        raise ExportError(f"{name}: {json_input.NUL_REFUSED}")
    content = content.replace("\r\n", "\n")
    meta, body = _front_matter(content, name)
    date = None
    if "date" in meta:
        value = meta["date"].strip().strip("'\"")
        try:
            date = read_date(value[:10])
            if len(value) > 10 and value[10] not in "T ":
                raise ValueError(value)
        except ValueError:
            raise ExportError(
                f"{name}: front matter date {value[:40]!r} is not a day (YYYY-MM-DD)"
            ) from None
    else:
        found = _NAME_DATE.match(PurePosixPath(name).name)
        if found is not None:
            try:
                date = read_date(found[1])
            except ValueError:
                raise ExportError(f"{name}: {found[1]} in the file name is not a day") from None
    if date is None:
        raise ExportError(
            f"{name}: no day: name the file YYYY-MM-DD.md or give `date:` in its front matter"
        )
    title = meta.get("title", "").strip().strip("'\"")
    text = (f"# {title}\n\n{body.strip()}" if title else body).strip()
    where = f"{name} ({date})"
    if is_blank(text):
        raise ExportError(f"{where}: the file has no text")
    tags = _tags(_tag_list(meta.get("tags", "")), where)
    noon = dt.datetime.fromisoformat(date).replace(hour=12, tzinfo=limits.zone).timestamp()
    return DiaryItem(f"markdown:{_digest(date, text)}", where, date, noon, text, tags)


def _front_matter(content: str, name: str) -> tuple[dict[str, str], str]:
    """The `key: value` lines of a leading `---` block (a following `- item` line belongs to
    the key before it), and the text after it."""
    if not content.startswith("---\n"):
        return {}, content
    end = re.search(r"^(?:---|\.\.\.)[ \t]*$", content[4:], re.MULTILINE)
    if end is None:
        raise ExportError(f"{name}: the front matter (---) is not closed")
    meta: dict[str, str] = {}
    key = None
    for line in content[4 : 4 + end.start()].splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.lstrip().startswith("- ") and key is not None:
            meta[key] = f"{meta[key]}, {line.strip()[2:]}" if meta[key] else line.strip()[2:]
            continue
        head, colon, value = line.partition(":")
        if not colon:
            raise ExportError(f"{name}: front matter line {line[:60]!r} is not `key: value`")
        key = head.strip().lower()
        meta[key] = value.strip()
    return meta, content[4 + end.end() :]


def _tag_list(value: str) -> list[str]:
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    return [tag.strip().strip("'\"").lstrip("#") for tag in value.split(",") if tag.strip()]


# --- shared -------------------------------------------------------------------------------------


def _tags(tags: Iterable[str], where: str) -> tuple[str, ...]:
    kept: list[str] = []
    for tag in tags:
        tag = tag.strip()
        if is_blank(tag):
            raise ExportError(f"{where}: a tag is empty")
        if len(tag) > MAX_TAG_CHARS:
            raise ExportError(f"{where}: a tag has more than {MAX_TAG_CHARS} characters")
        if tag not in kept:
            kept.append(tag)
    if len(kept) > MAX_TAGS:
        raise ExportError(f"{where}: more than {MAX_TAGS} tags")
    return tuple(kept)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# --- what was given: a zip, a JSON file, a Markdown file, a folder ------------------------------


def read_upload(raw: bytes, limits: Limits, name: str = "") -> Diary:
    """A diary from uploaded bytes: a zip (Day One's, with a `.json` at its top, or one of
    Markdown files), a Day One JSON file, or one Markdown file (`name` gives its day)."""
    if raw.startswith(b"PK\x03\x04"):
        return read_zip(raw, limits)
    if raw.lstrip()[:1] == b"{":
        return Diary("dayone", read_dayone(raw, limits))
    if PurePosixPath(name).suffix.lower() in MARKDOWN_SUFFIXES:
        return Diary("markdown", read_markdown([(PurePosixPath(name).name, raw)], limits))
    raise ExportError(
        "not a diary: give Day One's export (.json or .zip) or Markdown "
        "files (.md, several in a .zip)"
    )


def read_zip(raw: bytes, limits: Limits) -> Diary:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, OSError) as exc:
        raise ExportError(f"not a readable zip: {exc}") from None
    with archive:
        infos = _checked_members(archive, limits)
        names = {info.filename: info for info in infos}
        journals = [
            n
            for n in names
            if PurePosixPath(n).suffix.lower() == ".json" and len(PurePosixPath(n).parts) == 1
        ]
        if journals:
            photo_files = _photo_files(archive, names)
            items = [
                item
                for journal in sorted(journals)
                for item in read_dayone(
                    _member(archive, names[journal]),
                    limits,
                    photo_files,
                    journal if len(journals) > 1 else "",
                )
            ]
            return Diary("dayone", items, raw, {n: i.file_size for n, i in names.items()})
        markdown = [
            (n, _member(archive, info))
            for n, info in names.items()
            if PurePosixPath(n).suffix.lower() in MARKDOWN_SUFFIXES
        ]
        if not markdown:
            raise ExportError(
                "the zip holds neither a Day One export (.json at its top) nor Markdown files (.md)"
            )
        return Diary("markdown", read_markdown(markdown, limits))


def _checked_members(archive: zipfile.ZipFile, limits: Limits) -> list[zipfile.ZipInfo]:
    """The archive's files, each name safe; refused as a whole when it would unpack to
    more than allowed."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ExportError(f"the zip has {len(infos)} members; at most {MAX_MEMBERS}")
    total = 0
    files = []
    for info in infos:
        name = info.filename
        path = PurePosixPath(name)
        if (
            not path.parts
            or name.startswith("/")
            or "\\" in name
            or ".." in path.parts
            or ":" in path.parts[0]
        ):
            raise ExportError(f"the zip member {name[:100]!r} has an unsafe name")
        if info.is_dir() or path.parts[0] == "__MACOSX" or path.name.startswith("."):
            continue
        total += info.file_size
        if total > limits.max_bytes:
            log.warning(
                "diary import refused: too large unpacked",
                extra=fields(
                    members=len(infos), limit=limits.max_bytes, setting="import_max_bytes"
                ),
            )
            raise ExportError(
                f"the zip unpacks to more than {limits.max_bytes} bytes (setting import_max_bytes)"
            )
        if info.file_size > (1 << 20) and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            log.warning(
                "diary import refused: a member packed too tightly",
                extra=fields(bytes=info.file_size, packed=info.compress_size, limit=MAX_RATIO),
            )
            raise ExportError(
                f"the zip member {name[:100]!r} packs {info.file_size} bytes "
                f"into {info.compress_size}: refused"
            )
        files.append(info)
    return files


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, never more than its header says (a lying header is refused)."""
    try:
        with archive.open(info) as stream:
            data = stream.read(info.file_size + 1)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        raise ExportError(f"the zip member {info.filename[:100]!r} cannot be read: {exc}") from None
    if len(data) > info.file_size:
        raise ExportError(f"the zip member {info.filename[:100]!r} is larger than it says")
    return data


def _photo_files(archive: zipfile.ZipFile, names: Mapping[str, zipfile.ZipInfo]) -> dict[str, str]:
    """md5 → member name of the photo files (`photos/<md5>.<type>`), each checked against
    its md5."""
    found: dict[str, str] = {}
    for name, info in names.items():
        path = PurePosixPath(name)
        if len(path.parts) != 2 or path.parts[0] != "photos" or not _MD5.fullmatch(path.stem):
            continue
        if (
            hashlib.md5(_member(archive, info), usedforsecurity=False).hexdigest()
            != path.stem.lower()
        ):
            raise ExportError(f"the photo {name[:100]!r} does not match its md5")
        found[path.stem.lower()] = name
    return found


def photo_files(diary: Diary) -> Iterator[tuple[str, bytes]]:
    """(member name, bytes) of each photo file the diary's items name, each once, the
    archive opened once."""
    members = sorted({p.member for i in diary.items for p in i.photos if p.member is not None})
    if diary.archive is None or not members:
        return
    with zipfile.ZipFile(io.BytesIO(diary.archive)) as archive:
        for member in members:
            yield member, _member(archive, archive.getinfo(member))


def read_photo(diary: Diary, photo: PhotoRef) -> bytes | None:
    """A photo's bytes from the archive the diary came in (None: it is not there)."""
    if diary.archive is None or photo.member is None:
        return None
    with zipfile.ZipFile(io.BytesIO(diary.archive)) as archive:
        return _member(archive, archive.getinfo(photo.member))


def read_folder(folder: Path, limits: Limits) -> Diary:
    """A folder of Markdown files (and its subfolders; hidden names and links are passed
    over, nothing outside the folder is read)."""
    root = folder.resolve()
    if not root.is_dir():
        raise ExportError(f"{folder} is not a folder")
    files, total = [], 0
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if (
            any(part.startswith(".") for part in relative.parts)
            or path.is_symlink()
            or not path.is_file()
            or path.suffix.lower() not in MARKDOWN_SUFFIXES
        ):
            continue
        total += path.stat().st_size
        if total > limits.max_bytes:
            raise ExportError(
                f"the Markdown files of {folder} hold more than "
                f"{limits.max_bytes} bytes (setting import_max_bytes)"
            )
        files.append((relative.as_posix(), path.read_bytes()))
    return Diary("markdown", read_markdown(files, limits))
