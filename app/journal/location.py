"""Where a photo may carry its location, found in every metadata block of every kind taken.

Pillow reads one EXIF block and one XMP packet of a file (a JPEG's first APP1 of each); a
location can stand in any of them: a second APP1, a PNG `eXIf` chunk or an `iTXt` XMP packet
(compressed, or after the picture data), a WebP `EXIF`/`XMP ` chunk, a HEIC `Exif` or `mime`
item. So the raw bytes are searched too: every TIFF header (the start of any EXIF block,
whatever wraps it) is read for a GPS directory, and every XMP packet for a place. The search is
linear in the file and bounded in the blocks it reads, so a file full of planted headers costs
no more than reading it; past the bound the file counts as having a location (it is then
saved again without any, which is always safe).
"""

from __future__ import annotations

import re

from PIL import Image

GPS_IFD = 0x8825  # the EXIF tag that points at the location's directory
XMP_PACKET_TAG = 0x02BC  # EXIF's own copy of an XMP packet (TIFF tag XMLPacket)
_TIFF_HEADERS = (b"II*\x00", b"MM\x00*")
_EXIF_WINDOW = 256 * 1024  # bytes read after a TIFF header: an EXIF block fits (APP1: 64 KiB)
_MAX_BLOCKS = 64  # TIFF headers or XMP packets read; more: counted as a location
_XMP_OPEN, _XMP_CLOSE = b"<x:xmpmeta", b"</x:xmpmeta>"
_PLACE_WORDS = re.compile(rb"gps|latitude|longitude|location", re.IGNORECASE)


def location_places(raw: bytes, image: Image.Image) -> list[str]:
    """The kinds of block (`exif`, `xmp`) that carry a location in the file `raw`, decoded
    (loaded) as `image`; empty where none does."""
    places = []
    if _exif_has_gps(raw, image):
        places.append("exif")
    if _xmp_has_place(raw, image):
        places.append("xmp")
    return places


def exif_without_location(image: Image.Image) -> bytes:
    """The image's EXIF without its GPS directory and without an embedded XMP packet."""
    exif = image.getexif()
    exif.pop(GPS_IFD, None)
    exif.pop(XMP_PACKET_TAG, None)
    return exif.tobytes()


def _exif_has_gps(raw: bytes, image: Image.Image) -> bool:
    if GPS_IFD in image.getexif():
        return True
    read = 0
    for header in _TIFF_HEADERS:
        start = raw.find(header)
        while start != -1:
            read += 1
            if read > _MAX_BLOCKS:
                return True
            if _block_has_gps(raw[start : start + _EXIF_WINDOW]):
                return True
            start = raw.find(header, start + 1)
    return False


def _block_has_gps(block: bytes) -> bool:
    exif = Image.Exif()
    try:
        exif.load(block)
        return GPS_IFD in exif or XMP_PACKET_TAG in exif
    except Exception:  # noqa: BLE001 - four bytes that only look like a TIFF header
        return False


def _xmp_has_place(raw: bytes, image: Image.Image) -> bool:
    for key, value in image.info.items():
        if isinstance(key, str) and "xmp" in key.lower():
            if isinstance(value, str):
                value = value.encode("utf-8", "replace")
            if isinstance(value, bytes) and _PLACE_WORDS.search(value):
                return True
    start, read = raw.find(_XMP_OPEN), 0
    while start != -1:
        read += 1
        end = raw.find(_XMP_CLOSE, start)
        if read > _MAX_BLOCKS or end == -1:  # an open packet is read as one with a place
            return True
        if _PLACE_WORDS.search(raw, start, end):
            return True
        start = raw.find(_XMP_OPEN, end)
    return False
