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

Decoding is blocking (milliseconds to a second for a large HEIC): the server runs it in a
decoding process (`app.journal.decoders`), an importer's `add_media_sync` in its own thread.

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
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, ImageOps, UnidentifiedImageError

from app.core.log import fields
from app.core.refusal import Refused
from app.core.settings import Settings
from app.journal.decoders import DecoderStopped, in_worker
from app.journal.location import exif_without_location, location_places
from app.journal.models import Asset
from app.journal.pixels import BudgetFull, PixelBudget
from app.journal.rows import entry_row, new_id, require_live
from app.storage.connection import Connection
from app.storage.database import Database
from app.storage.errors import Missing

log = logging.getLogger(__name__)

MEDIA_FOLDER = "media"  # in the files dir (seed 004: `data/media/<profile_id>/`)
THUMB_SIDE = 320
ORIENTATION = 0x0112  # the EXIF tag of how the picture is turned
# Decoded size refused above this, read from the header before anything is decoded (a
# 12-megapixel phone photo or a 36-megapixel camera's fits; a 48-megapixel full-size shot does
# not: about 160 MB decoded, several times that while the thumbnail is made).
MAX_PIXELS = 40_000_000
# The pixels the whole process decodes at once (`PixelBudget`): two of the largest photos;
# a third upload waits its turn rather than add another half gigabyte.
DECODE_WORKERS = 2
DECODE_WAITING = 8  # uploads that may wait for the budget; more: 503 decoder_busy
DECODE_BUDGET = PixelBudget(DECODE_WORKERS * MAX_PIXELS, max_waiting=DECODE_WAITING)
DECODE_RETRY_S = 5  # the Retry-After of a busy answer
# Pillow's own bomb check (it refuses above twice this while opening) agrees with ours; its
# warning between the two is not needed: the header check below refuses those, logged.
Image.MAX_IMAGE_PIXELS = MAX_PIXELS
warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)
NAME_MAX_CHARS = 120
# Pillow's format name → the stored kind, its file extension and content type.
KINDS: dict[str, tuple[str, str, str]] = {
    "JPEG": ("jpeg", "jpg", "image/jpeg"),
    "PNG": ("png", "png", "image/png"),
    "WEBP": ("webp", "webp", "image/webp"),
    "HEIF": ("heic", "heic", "image/heic"),
}
CONTENT_TYPES = {kind: content_type for kind, _, content_type in KINDS.values()}
# The name extensions that say the kind truly; any other is replaced by the kind's own.
NAME_EXTENSIONS = {
    "jpeg": ("jpg", "jpeg"),
    "png": ("png",),
    "webp": ("webp",),
    "heic": ("heic", "heif"),
}
THUMB_CONTENT_TYPE = "image/webp"
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

    def __reduce__(self) -> tuple[type[MediaRefused], tuple[int, str, str, dict[str, str]]]:
        # from a decoding process
        return MediaRefused, (self.status, self.code, self.message, self.headers)


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

    def view(self) -> Asset:
        """The photo as the API shows it: never its files."""
        return Asset(
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


def decode(raw: bytes, *, keep_location: bool, user_id: str = "") -> Decoded:
    """Check that `raw` is a whole image of a kind this app takes, and make what is stored:
    its size read from the header first, then decoded within `DECODE_BUDGET` (blocking)."""
    image = opened(raw, user_id)
    with DECODE_BUDGET.hold(pixels(image)):
        return decoded(image, raw, keep_location=keep_location)


def pixels(image: Image.Image) -> int:
    width, height = image.size
    return width * height


def decoded(image: Image.Image, raw: bytes, *, keep_location: bool) -> Decoded:
    """The opened (not yet decoded) `image` of the file `raw`, decoded; the caller holds
    its pixels of `DECODE_BUDGET`."""
    kind = KINDS[image.format or ""][0]
    try:
        image.load()
        shown = _upright(image)
    except (OSError, ValueError, SyntaxError) as exc:
        raise MediaRefused(400, "invalid_image", f"the image cannot be decoded: {exc}") from None
    width, height = shown.size
    places = [] if keep_location else location_places(raw, image)
    data = _without_location(image, kind) if places else raw
    return Decoded(kind, data, _thumbnail(shown), width, height)


def decode_file(raw: bytes, keep_location: bool) -> Decoded:
    """`decoded` of the bytes alone (what a decoding process is sent; it opens them again,
    a header read)."""
    return decoded(_open(raw), raw, keep_location=keep_location)


def opened(raw: bytes, user_id: str = "") -> Image.Image:
    """`raw` opened: its header read, nothing decoded; refused (`MediaRefused`) when it is
    not an image of a kind taken or declares more than `MAX_PIXELS` (logged, the limit named)."""
    try:
        return _open(raw)
    except MediaRefused as exc:
        if exc.code == "image_too_large":
            log.warning(
                "photo refused: too many pixels",
                extra=fields(user_id=user_id, bytes=len(raw), limit=MAX_PIXELS, detail=exc.message),
            )
        raise


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


def declared_cost(raw: bytes) -> tuple[int, int]:
    """The pixels and decoded bytes the header of `raw` declares, nothing decoded (what
    costs a budget before any photo is decoded); (0, 0) for a file that is no image taken,
    which is refused on its own without a decode."""
    try:
        image = Image.open(io.BytesIO(raw))
    except Image.DecompressionBombError:  # over twice the limit: at least that much
        return 2 * MAX_PIXELS + 1, 4 * (2 * MAX_PIXELS + 1)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
        return 0, 0
    with image:
        if image.format not in KINDS:
            return 0, 0
        count = pixels(image)
        sample_bytes = 2 if "16" in image.mode else 1
        return count, count * len(image.getbands()) * sample_bytes


def _looks_like_heif(raw: bytes) -> bool:
    return raw[4:8] == b"ftyp" and raw[8:12] in _HEIF_BRANDS


def _without_location(image: Image.Image, kind: str) -> bytes:
    """The image saved again with no location in any block: its EXIF kept but the GPS
    directory (and an XMP copy), no XMP, no other metadata block; a JPEG keeps its own
    quantisation (`quality="keep"`), so it loses next to nothing. The result is searched
    again, so a location the encoder carried over is refused rather than stored."""
    options: dict[str, Any] = {"exif": exif_without_location(image)}
    if image.info.get("icc_profile"):
        options["icc_profile"] = image.info["icc_profile"]
    if kind == "jpeg":  # a comment (COM) may say anything: it goes with the location
        options.update(quality="keep", comment=b"")
    elif kind == "webp" or kind == "heic":
        options["quality"] = 95
    if kind == "heic":  # pillow-heif carries the opened file's XMP and blocks unless told
        options.update(xmp=None, metadata=[])
    out = io.BytesIO()
    image.save(out, format="HEIF" if kind == "heic" else kind.upper(), **options)
    data = out.getvalue()
    # Opened, not decoded: what Pillow wrote is all before the picture data, and the raw
    # search reads every block wherever it is.
    if left := location_places(data, Image.open(io.BytesIO(data))):
        raise MediaRefused(
            422, "location_not_removed", f"the location could not be removed ({', '.join(left)})"
        )
    return data


def name_for_kind(name: str, kind: str) -> str:
    """`name` with the extension of `kind`, where its own does not say that kind (a PNG named
    `evil.html` is `evil.png`): what an export writes opens as what the bytes are."""
    stem, dot, extension = name.rpartition(".")
    if dot and stem and extension.lower() in NAME_EXTENSIONS[kind]:
        return name
    own = next(ext for k, ext, _ in KINDS.values() if k == kind)
    return f"{stem if dot and stem else name}.{own}"


def _upright(image: Image.Image) -> Image.Image:
    """The image as it is meant to be seen; itself (no copy of a 40 MP picture, a third of a
    second and 120 MB) where its EXIF orientation is the normal one."""
    if image.getexif().get(ORIENTATION, 1) == 1:
        return image
    return ImageOps.exif_transpose(image)


def _thumbnail(image: Image.Image) -> bytes:
    """The WebP thumbnail, at most `THUMB_SIDE` a side: made small first (Pillow's reducing
    resize, as `Image.thumbnail` does) and converted after, so no full-size copy is made."""
    mode = "RGBA" if image.mode in ("RGBA", "LA", "P", "PA") else "RGB"
    if image.mode not in ("RGB", "RGBA", "L", "LA"):  # a palette, CMYK, 16 bits: whole first
        image = image.convert(mode)
    scale = min(THUMB_SIDE / image.width, THUMB_SIDE / image.height, 1.0)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    small = image.resize(size, Image.Resampling.BICUBIC, reducing_gap=2.0).convert(mode)
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
        image = await asyncio.to_thread(opened, data, user_id)
        keep = self.settings.media_keep_location
        try:
            async with DECODE_BUDGET.hold_async(pixels(image)):  # waits on the loop
                photo = await in_worker(DECODE_WORKERS, decode_file, data, keep)
        except BudgetFull:
            log.warning(
                "photo refused: decoder busy",
                extra=fields(user_id=user_id, limit=DECODE_WAITING, budget=DECODE_BUDGET.capacity),
            )
            raise MediaRefused(
                503,
                "decoder_busy",
                f"{DECODE_WAITING} photos wait to be decoded already; try again in a moment",
                {"Retry-After": str(DECODE_RETRY_S)},
            ) from None
        except DecoderStopped:
            log.warning("photo refused: its decoder stopped", extra=fields(user_id=user_id))
            raise MediaRefused(
                503, "decoder_stopped", "the photo could not be decoded now; try again"
            ) from None
        return await self.db.execute_write_fn(
            lambda conn: insert_media(conn, self.root, user_id, entry_id, name, photo)
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
    photo = decode(data, keep_location=settings.media_keep_location, user_id=user_id)
    return insert_media(conn, settings.files_path, user_id, entry_id, name, photo)


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
        free_name(name_for_kind(name, decoded.kind), taken),
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


def free_name(name: str, taken: set[str]) -> str:
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
