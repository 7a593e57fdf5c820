"""A character's picture, with Pillow: checked and stored, scaled down for the picker, made up
when there is none, and the PNG text chunks a character card travels in.

- `stored_png(raw)`: an uploaded picture (PNG, JPEG, WebP, GIF) or a card's own image,
  re-encoded as a PNG of at most `MAX_SIDE` pixels a side — without the card's text chunks,
  EXIF data (a phone photo's GPS position) or anything else the file carried;
- `thumbnail(path, size)`: the picker's small version;
- `placeholder(seed)`: a plain picture for a card of a character without one;
- `text_chunks(raw)` / `with_text_chunk(png, key, value)`: read and write `tEXt` chunks.

Every function is blocking (decoding an image takes milliseconds): the API calls them in a
worker thread. A file Pillow cannot read, a format not listed, or an image of more than
`MAX_PIXELS` pixels (a decompression bomb is small on disk: refused before it is decoded), a
compressed text chunk that inflates past Pillow's `PngImagePlugin.MAX_TEXT_CHUNK` or a chunk
longer than the file is a `PictureError` that says which.
"""

from __future__ import annotations

import functools
import hashlib
import io
from pathlib import Path

from PIL import Image, PngImagePlugin, UnidentifiedImageError

from app.core.refusal import RefusedKind

FORMATS = ("PNG", "JPEG", "WEBP", "GIF")
MAX_PIXELS = 4096 * 4096  # decoded size refused above this (a 12-megapixel photo fits)
MAX_SIDE = 1024  # a stored picture is at most this wide and high
THUMBNAIL_SIZES = (48, 96, 192)
PLACEHOLDER_SIZE = (400, 600)  # portrait, as card sites show them
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class PictureError(RefusedKind, ValueError):
    """Not a picture this app takes; the message says why."""

    STATUS, CODE = 400, "invalid_picture"


def _open(raw: bytes) -> Image.Image:
    try:
        image = Image.open(io.BytesIO(raw))
    except UnidentifiedImageError:
        raise PictureError("not a picture (PNG, JPEG, WebP or GIF)") from None
    except Image.DecompressionBombError:  # Pillow's own bound, far above ours
        raise PictureError(
            f"the picture declares more than {MAX_PIXELS} pixels (a decompression bomb?)"
        ) from None
    except ValueError as exc:  # a compressed text chunk past PngImagePlugin.MAX_TEXT_CHUNK
        raise PictureError(f"a chunk of the file is too large ({exc})") from None
    except OSError as exc:  # a chunk longer than the file, a broken header
        raise PictureError(f"the file is broken ({exc})") from None
    if image.format not in FORMATS:
        raise PictureError(f"a {image.format} picture is not taken: use PNG, JPEG, WebP or GIF")
    width, height = image.size
    if width * height > MAX_PIXELS:
        raise PictureError(
            f"the picture has {width} × {height} pixels; at most {MAX_PIXELS} are taken"
        )
    return image


def _loaded(image: Image.Image) -> Image.Image:
    try:
        image.load()
    except (OSError, ValueError, SyntaxError) as exc:
        raise PictureError(f"the picture cannot be decoded: {exc}") from None
    mode = "RGBA" if image.mode in ("RGBA", "LA", "P", "PA") else "RGB"
    return image.convert(mode)


def stored_png(raw: bytes) -> bytes:
    """The picture as this app stores it: PNG, at most `MAX_SIDE` a side, nothing but pixels."""
    image = _loaded(_open(raw))
    image.thumbnail((MAX_SIDE, MAX_SIDE))
    return _png(image)


def thumbnail(path: Path, size: int) -> bytes:
    image = _loaded(_open(path.read_bytes()))
    image.thumbnail((size, size))
    return _png(image)


@functools.lru_cache(maxsize=256)
def cached_thumbnail(path: str, stamp: int, size: int) -> bytes:
    """`thumbnail`, kept for the file's version `stamp` (its modification time): the picker
    asks for the same small pictures on every page load."""
    return thumbnail(Path(path), size)


def placeholder(seed: str) -> bytes:
    """A plain portrait in a soft colour of its own for each seed (the character's id)."""
    digest = hashlib.sha256(seed.encode()).digest()
    colour = tuple(150 + b % 90 for b in digest[:3])
    return _png(Image.new("RGB", PLACEHOLDER_SIZE, colour))


def _png(image: Image.Image, info: PngImagePlugin.PngInfo | None = None) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def is_png(raw: bytes) -> bool:
    return raw.startswith(PNG_SIGNATURE)


def text_chunks(raw: bytes) -> dict[str, str]:
    """The text chunks of a PNG by keyword (the image is decoded too: a card's chunk often
    follows the image data, and a PNG that does not decode is no card)."""
    image = _open(raw)
    if image.format != "PNG":
        raise PictureError("not a PNG")
    try:
        chunks = dict(image.text)  # type: ignore[attr-defined]  # PngImageFile only
    except (OSError, ValueError, SyntaxError) as exc:
        raise PictureError(f"the PNG cannot be read: {exc}") from None
    return {key: str(value) for key, value in chunks.items()}


def with_text_chunk(png: bytes, key: str, value: str) -> bytes:
    """`png` (a stored picture) with one `tEXt` chunk `key` holding `value` (ASCII)."""
    image = _loaded(_open(png))
    info = PngImagePlugin.PngInfo()
    info.add_text(key, value)  # tEXt, never compressed: card readers expect tEXt
    return _png(image, info)
