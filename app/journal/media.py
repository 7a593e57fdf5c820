"""Photos in journal entries (seed 004 `media_assets`: a local file and its kind).

`MediaStore.add_media(user_id, entry_id, name, data)` is the one way a photo comes into an
entry — the API's upload and an importer alike (`add_media_sync` is the same inside a
transaction an importer holds on its own connection). The bytes are decoded with Pillow (HEIC with
pillow-heif, where it is installed) before anything is written: what counts is the decoded
format, never the name's extension, and only JPEG, PNG, WebP and HEIC are taken. The EXIF
location (GPS) and XMP (which may repeat it) are removed unless the setting
`media_keep_location` says to keep them; a file without a location is stored byte for byte.
A thumbnail (WebP, `THUMB_SIDE` a side, no metadata) is made once, when the photo is added.

Files live in the files dir's `media/<user folder>/` (`MEDIA_FOLDER`; the files dir is the
data dir unless `files_dir` names a volume the processes of an install share — so a photo
uploaded through one is served by all; backed up whole with the other user data): `<asset_id>.<ext>` and `<asset_id>.thumb.webp`, written under a
hidden temporary name and renamed, inside the writer's transaction that adds the row — a
refused photo (not an image, a kind not taken, too large, an odd name, an entry that is not
the user's) leaves neither a file nor a row. They are served only to their owner, and never
reach a model: the journal's prompts are built from the day's messages and the entry's text.

Decoding is blocking (milliseconds to a second for a large HEIC): it runs in a worker thread.

One module: the one way a photo comes in — decoding, the location strip, the thumbnail and the
rows — each step the next one's input.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import os
import re
import sqlite3
import time
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps, UnidentifiedImageError

from app.core.log import fields
from app.core.refusal import Refused
from app.core.settings import Settings
from app.journal.rows import asset_dict, entry_row, new_id, require_live
from app.storage.connection import Connection
from app.storage.database import Database
from app.storage.errors import Missing

log = logging.getLogger(__name__)

MEDIA_FOLDER = "media"  # in the files dir (seed 004: `data/media/<profile_id>/`)
THUMB_SIDE = 320
MAX_PIXELS = 64 * 1024 * 1024  # decoded size refused above this (a 48-megapixel phone photo fits)
NAME_MAX_CHARS = 120
# Pillow's format name → the stored kind, its file extension and content type.
KINDS: dict[str, tuple[str, str, str]] = {
    "JPEG": ("jpeg", "jpg", "image/jpeg"),
    "PNG": ("png", "png", "image/png"),
    "WEBP": ("webp", "webp", "image/webp"),
    "HEIF": ("heic", "heic", "image/heic"),
}
CONTENT_TYPES = {kind: content_type for kind, _, content_type in KINDS.values()}
THUMB_CONTENT_TYPE = "image/webp"
GPS_IFD = 0x8825  # the EXIF tag that points at the location's directory
# A name: letters, digits, space and `._-()+,` — no path separator, no control or format
# character, not starting with a dot or a space.
_NAME = re.compile(r"[^\W_][\w .,()+-]*", re.UNICODE)
_USER_FOLDER = re.compile(r"[a-z0-9_-][a-z0-9_.-]*", re.ASCII)
_HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1")

try:  # the well-kept HEIC decoder for Pillow; without it HEIC is refused, clearly
    import pillow_heif

    pillow_heif.register_heif_opener()
    HEIC_DECODER = True
except ImportError:  # pragma: no cover - pillow-heif is a dependency; a trimmed install
    HEIC_DECODER = False


class MediaRefused(Refused, ValueError):
    """A photo this app does not take; `status` and `code` are the API's answer."""


@dataclass(frozen=True, slots=True)
class MediaAsset:
    asset_id: str
    entry_id: str
    name: str
    kind: str
    bytes: int
    width: int
    height: int
    created_at: float
    files: tuple[str, ...] = ()  # the photo's and its thumbnail's path in the files dir

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.kind]

    def as_dict(self) -> dict[str, Any]:
        return asset_dict(
            self.asset_id,
            self.entry_id,
            self.name,
            self.kind,
            self.bytes,
            self.width,
            self.height,
            self.created_at,
        )


@dataclass(frozen=True, slots=True)
class Decoded:
    """A photo as it will be stored: its kind, the bytes of the file, its thumbnail."""

    kind: str
    data: bytes
    thumb: bytes
    width: int
    height: int


# --- names and paths -------------------------------------------------------------------------


def checked_name(raw: str) -> str:
    """The user's file name, NFC; `invalid_name` for one with path parts or odd characters."""
    name = unicodedata.normalize("NFC", raw)
    if (
        not name
        or len(name) > NAME_MAX_CHARS
        or name.endswith((" ", "."))
        or _NAME.fullmatch(name) is None
    ):
        raise MediaRefused(
            400,
            "invalid_name",
            f"the file name {raw[:80]!r} is not taken: a "
            f"plain name of at most {NAME_MAX_CHARS} letters, digits, spaces "
            "and . , _ - ( ) +, without a folder",
        )
    return name


def user_folder(user_id: str) -> str:
    """The user's folder under `MEDIA_FOLDER`: the user's name where it is a plain one (every
    account name is), else a digest of it — never a path that leads elsewhere."""
    if _USER_FOLDER.fullmatch(user_id) and ".." not in user_id:
        return user_id
    return "u-" + hashlib.sha256(user_id.encode()).hexdigest()[:32]


def stored_paths(user_id: str, asset_id: str, kind: str) -> tuple[str, str]:
    """The file and the thumbnail of an asset, relative to the files dir."""
    extension = next(ext for k, ext, _ in KINDS.values() if k == kind)
    folder = f"{MEDIA_FOLDER}/{user_folder(user_id)}"
    return f"{folder}/{asset_id}.{extension}", f"{folder}/{asset_id}.thumb.webp"


# --- decoding --------------------------------------------------------------------------------


def decode(raw: bytes, *, keep_location: bool) -> Decoded:
    """Check that `raw` is a whole image of a kind this app takes, and make what is stored."""
    image = _open(raw)
    kind = KINDS[image.format or ""][0]
    try:
        image.load()
        shown = ImageOps.exif_transpose(image)
    except (OSError, ValueError, SyntaxError) as exc:
        raise MediaRefused(400, "invalid_image", f"the image cannot be decoded: {exc}") from None
    width, height = shown.size
    data = raw if keep_location or not _has_location(image) else _without_location(image, kind)
    return Decoded(kind, data, _thumbnail(shown), width, height)


def _open(raw: bytes) -> Image.Image:
    if _looks_like_heif(raw) and not HEIC_DECODER:
        raise MediaRefused(
            415,
            "kind_not_allowed",
            "HEIC photos cannot be decoded here "
            "(pillow-heif is not installed): convert it to JPEG first",
        )
    try:
        image = Image.open(io.BytesIO(raw))
    except UnidentifiedImageError:
        raise MediaRefused(
            400, "not_an_image", "the file is not an image (JPEG, PNG, WebP or HEIC)"
        ) from None
    except Image.DecompressionBombError:
        raise MediaRefused(
            413, "image_too_large", f"the image declares more than {MAX_PIXELS} pixels"
        ) from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise MediaRefused(400, "not_an_image", f"the file is broken ({exc})") from None
    if image.format not in KINDS:
        raise MediaRefused(
            415,
            "kind_not_allowed",
            f"a {image.format} image is not taken: use JPEG, PNG, WebP or HEIC",
        )
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise MediaRefused(
            413,
            "image_too_large",
            f"the image has {width} × {height} pixels; at most {MAX_PIXELS} are taken",
        )
    return image


def _looks_like_heif(raw: bytes) -> bool:
    return raw[4:8] == b"ftyp" and raw[8:12] in _HEIF_BRANDS


def _has_location(image: Image.Image) -> bool:
    xmp = image.info.get("xmp") or b""
    if isinstance(xmp, str):
        xmp = xmp.encode("utf-8", "replace")
    return GPS_IFD in image.getexif() or b"GPS" in xmp


def _without_location(image: Image.Image, kind: str) -> bytes:
    """The image saved again without its location: EXIF kept but its GPS directory, no XMP;
    a JPEG keeps its own quantisation (`quality="keep"`), so it loses next to nothing."""
    exif = image.getexif()
    exif.pop(GPS_IFD, None)
    options: dict[str, Any] = {"exif": exif.tobytes()}
    if image.info.get("icc_profile"):
        options["icc_profile"] = image.info["icc_profile"]
    if kind == "jpeg":
        options["quality"] = "keep"
    elif kind == "webp" or kind == "heic":
        options["quality"] = 95
    out = io.BytesIO()
    image.save(out, format="HEIF" if kind == "heic" else kind.upper(), **options)
    return out.getvalue()


def _thumbnail(image: Image.Image) -> bytes:
    small = image.convert("RGBA" if image.mode in ("RGBA", "LA", "P", "PA") else "RGB")
    small.thumbnail((THUMB_SIDE, THUMB_SIDE))
    out = io.BytesIO()
    small.save(out, format="WEBP", quality=80)
    return out.getvalue()


# --- the store -------------------------------------------------------------------------------


class MediaStore:
    """The photos of journal entries: rows in `media_assets`, files under the data dir."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.root = settings.files_path

    async def add_media(self, user_id: str, entry_id: str, name: str, data: bytes) -> MediaAsset:
        """Add the photo `data` (named `name`) to the user's entry `entry_id`: all of it
        (file, thumbnail, row) or, refused (`MediaRefused`, `Missing` for an entry that is
        not the user's, `Conflict` for one in the trash), nothing."""
        name = _checked_upload(user_id, name, data, self.settings)
        decoded = await asyncio.to_thread(
            decode, data, keep_location=self.settings.media_keep_location
        )
        return await self.db.execute_write_fn(
            lambda conn: insert_media(conn, self.root, user_id, entry_id, name, decoded)
        )

    async def asset_file(
        self, user_id: str, asset_id: str, *, thumb: bool = False
    ) -> tuple[MediaAsset, Path]:
        """The user's asset and its file (or thumbnail); `Missing` for anyone else's."""

        def read(conn: sqlite3.Connection) -> tuple[MediaAsset, Path]:
            row = conn.execute(
                "SELECT * FROM media_assets WHERE asset_id = ? AND user_id = ?", (asset_id, user_id)
            ).fetchone()
            if row is None:
                raise Missing(f"no photo {asset_id!r}")
            return _asset(row), self.root / row["thumb" if thumb else "file"]

        asset, path = await self.db.execute_fn(read)
        if not path.is_file():
            raise Missing(f"the file of photo {asset_id!r} is gone")
        return asset, path

    async def delete_media(self, user_id: str, asset_id: str) -> None:
        """Remove one photo of a live entry, row and files."""

        def write(conn: sqlite3.Connection) -> list[str]:
            row = conn.execute(
                "SELECT * FROM media_assets WHERE asset_id = ? AND user_id = ?", (asset_id, user_id)
            ).fetchone()
            if row is None:
                raise Missing(f"no photo {asset_id!r}")
            require_live(entry_row(conn, user_id, row["entry_id"], hold=True))
            conn.execute("DELETE FROM media_assets WHERE asset_id = ?", (asset_id,))
            return [row["file"], row["thumb"]]

        remove_files(self.root, await self.db.execute_write_fn(write))


def add_media_sync(
    conn: Connection,
    settings: Settings,
    user_id: str,
    entry_id: str,
    name: str,
    data: bytes,
) -> MediaAsset:
    """`MediaStore.add_media` inside a transaction the caller holds (an importer's own
    connection; blocking). Its files are written at once: should the caller's transaction
    roll back, it removes them with `remove_files(settings.files_path, asset.files)`."""
    name = _checked_upload(user_id, name, data, settings)
    decoded = decode(data, keep_location=settings.media_keep_location)
    return insert_media(conn, settings.files_path, user_id, entry_id, name, decoded)


def _checked_upload(user_id: str, name: str, data: bytes, settings: Settings) -> str:
    """The checks before decoding: the size (`media_max_bytes`) and the name."""
    limit = settings.media_max_bytes
    if len(data) > limit:
        log.warning(
            "photo refused: too large",
            extra=fields(user_id=user_id, bytes=len(data), limit=limit, setting="media_max_bytes"),
        )
        raise MediaRefused(
            413,
            "too_large",
            f"the photo has {len(data)} bytes; at most {limit} are taken (setting media_max_bytes)",
        )
    if not data:
        raise MediaRefused(400, "empty_upload", "a photo was expected; the file is empty")
    return checked_name(name)


def insert_media(
    conn: Connection, root: Path, user_id: str, entry_id: str, name: str, decoded: Decoded
) -> MediaAsset:
    """Write the decoded photo's files under the files dir `root` and add its row, in the
    caller's transaction: to the user's live entry, or nothing (the files removed again)."""
    require_live(entry_row(conn, user_id, entry_id, hold=True))
    taken = {
        row[0]
        for row in conn.execute("SELECT name FROM media_assets WHERE entry_id = ?", (entry_id,))
    }
    asset_id = new_id("media")
    file, thumb = stored_paths(user_id, asset_id, decoded.kind)
    asset = MediaAsset(
        asset_id,
        entry_id,
        _free_name(name, taken),
        decoded.kind,
        len(decoded.data),
        decoded.width,
        decoded.height,
        time.time(),
        (file, thumb),
    )
    written = []
    try:
        for relative, body in ((file, decoded.data), (thumb, decoded.thumb)):
            _write_private(root / relative, body)
            written.append(relative)
        conn.execute(
            "INSERT INTO media_assets (asset_id, user_id, entry_id, name, kind, file, "
            "thumb, bytes, sha256, width, height, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                asset.asset_id,
                user_id,
                entry_id,
                asset.name,
                asset.kind,
                file,
                thumb,
                asset.bytes,
                hashlib.sha256(decoded.data).hexdigest(),
                asset.width,
                asset.height,
                asset.created_at,
            ),
        )
    except BaseException:
        remove_files(root, written)
        raise
    return asset


def _asset(row: sqlite3.Row) -> MediaAsset:
    return MediaAsset(
        row["asset_id"],
        row["entry_id"],
        row["name"],
        row["kind"],
        row["bytes"],
        row["width"],
        row["height"],
        row["created_at"],
        (row["file"], row["thumb"]),
    )


def _free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name (2)` … where the entry has one of that name already (an export puts
    an entry's photos into one folder under their names)."""
    stem, dot, extension = name.rpartition(".")
    if not dot:
        stem, extension = name, ""
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        candidate = f"{stem} ({n}){dot}{extension}"
    return candidate


def _write_private(path: Path, body: bytes) -> None:
    """Write `body` to `path` (mode 0600) through a hidden temporary name."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    temporary = path.with_name(f".{path.name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def remove_files(root: Path, files: Iterable[str]) -> None:
    """Remove the stored files `files` (relative to the files dir `root`)."""
    for relative in files:
        (root / relative).unlink(missing_ok=True)
