"""The location goes from every metadata block of every kind taken (issue 38 item 6): files
built with a location in each place a format can hold one — EXIF's GPS directory (in the first
or a second JPEG APP1, a PNG `eXIf`, a WebP `EXIF` chunk, a HEIC `Exif` item), an XMP packet
(JPEG APP1, PNG `iTXt` plain, compressed or after the picture data, WebP `XMP ` chunk, HEIC
`mime` item, EXIF's own XMLPacket tag). Each place carries a marker; the stored file, the
served one and the export hold none of them, and the photo still decodes to its picture."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image, PngImagePlugin

from app.journal.location import GPS_IFD, XMP_PACKET_TAG, location_places
from app.journal.media import decode
from tests.conftest import AUTH
from tests.journal.test_api import jclient, journal_app  # noqa: F401 — fixtures
from tests.journal.test_media import DATE, MAKE, new_entry, upload

MARK = b"NOVABERG-PLACE-MARK"  # in every location written; never in a cleaned file
GPS = {1: "N", 2: (52.0, 31.0, 12.0), 3: "E", 4: (13.0, 24.0, 36.0), 0x12: MARK.decode()}
XMP = (
    b'<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/">'
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
    b'xmlns:exif="http://ns.adobe.com/exif/1.0/" exif:GPSLatitude="52,31.2N" '
    b'exif:GPSLongitude="13,24.6E" exif:GPSMapDatum="' + MARK + b'"/></rdf:RDF></x:xmpmeta>'
    b'<?xpacket end="w"?>'
)

PLACES = {
    "JPEG": ["exif", "second_app1", "xmp", "exif_xmp_tag", "comment_headers"],
    "PNG": ["exif", "itxt", "itxt_zip", "itxt_after_idat", "exif_xmp_tag"],
    "WEBP": ["exif", "xmp", "exif_xmp_tag"],
    "HEIF": ["exif", "xmp", "exif_xmp_tag"],
}


def _exif(*, gps: bool, xmp_tag: bool = False) -> bytes:
    exif = Image.Exif()
    exif[MAKE] = "Novaberg Cam"
    if gps:
        exif[GPS_IFD] = GPS
    if xmp_tag:
        exif[XMP_PACKET_TAG] = XMP
    return exif.tobytes()


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _after_jpeg_app_segments(data: bytes, segment: bytes) -> bytes:
    """`segment` put after the JPEG's last APPn segment (a second APP1 after the first)."""
    at = 2
    while data[at] == 0xFF and 0xE0 <= data[at + 1] <= 0xEF:
        at += 2 + struct.unpack(">H", data[at + 2 : at + 4])[0]
    return data[:at] + segment + data[at:]


def photo(fmt: str, places: frozenset[str], size: tuple[int, int] = (96, 64)) -> bytes:
    """A photo of `fmt` with a location in each of `places` (and a camera maker in EXIF)."""
    image = Image.new("RGB", size, "teal")
    options: dict[str, object] = {
        "exif": _exif(gps="exif" in places, xmp_tag="exif_xmp_tag" in places)
    }
    if "xmp" in places:
        options["xmp"] = XMP
    if fmt == "PNG" and places & {"itxt", "itxt_zip"}:
        info = PngImagePlugin.PngInfo()
        info.add_itxt("XML:com.adobe.xmp", XMP.decode(), zip="itxt_zip" in places)
        options["pnginfo"] = info
    if fmt == "JPEG" and "comment_headers" in places:  # planted TIFF headers, past the bound
        options["comment"] = b"II*\x00" * 100 + MARK
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    data = out.getvalue()
    if fmt == "JPEG" and "second_app1" in places:
        body = _exif(gps=True)
        data = _after_jpeg_app_segments(data, b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body)
    if fmt == "PNG" and "itxt_after_idat" in places:
        body = b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + XMP
        data = data[:-12] + _png_chunk(b"iTXt", body) + data[-12:]
    return data


def assert_no_location(data: bytes, fmt: str, size: tuple[int, int] = (96, 64)) -> None:
    assert MARK not in data and b"GPSLatitude" not in data
    image = Image.open(io.BytesIO(data))
    image.load()
    assert image.format == fmt and image.size == size
    assert GPS_IFD not in image.getexif() and XMP_PACKET_TAG not in image.getexif()
    assert not [k for k in image.info if "xmp" in str(k).lower()]
    for key in ("exif", "xmp", "XML:com.adobe.xmp"):  # compressed blocks, decompressed
        value = image.info.get(key) or b""
        assert MARK not in (value.encode() if isinstance(value, str) else value)
    assert location_places(data, image) == []


@pytest.mark.parametrize(("fmt", "place"), [(f, p) for f, ps in PLACES.items() for p in ps])
def test_each_place_is_found_in_the_file_as_built(fmt, place):
    data = photo(fmt, frozenset({place}))
    image = Image.open(io.BytesIO(data))
    image.load()
    assert location_places(data, image), (fmt, place)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(PLACES)).flatmap(
        lambda fmt: st.tuples(st.just(fmt), st.frozensets(st.sampled_from(PLACES[fmt]), min_size=1))
    )
)
def test_no_location_is_left_in_any_block(case):
    fmt, places = case
    stored = decode(photo(fmt, places), keep_location=False)
    assert_no_location(stored.data, fmt)
    assert MARK not in stored.thumb
    kept = Image.open(io.BytesIO(stored.data)).getexif()
    assert kept.get(MAKE) == "Novaberg Cam"  # the rest of EXIF stays


def test_a_photo_without_a_location_is_kept_byte_for_byte():
    for fmt in PLACES:
        raw = photo(fmt, frozenset())
        assert decode(raw, keep_location=False).data == raw


@pytest.mark.parametrize(
    ("fmt", "places"),
    [
        ("HEIF", frozenset({"xmp"})),
        ("HEIF", frozenset({"exif", "xmp"})),
        ("JPEG", frozenset({"second_app1"})),
        ("PNG", frozenset({"itxt_after_idat"})),
        ("WEBP", frozenset({"xmp", "exif"})),
    ],
)
async def test_the_served_file_and_the_export_carry_no_location(client, fmt, places):
    entry = await new_entry(client)
    asset = await upload(client, entry["entry_id"], photo(fmt, places), name="ort")
    served = await (await client.get(asset["url"], headers=AUTH)).read()
    assert_no_location(served, fmt)
    thumb = await (await client.get(asset["thumb_url"], headers=AUTH)).read()
    assert MARK not in thumb
    response = await client.get("/api/exports/journal?format=md&per=entry", headers=AUTH)
    archive = zipfile.ZipFile(io.BytesIO(await response.read()))
    [name] = [n for n in archive.namelist() if n.startswith(f"{DATE}/")]
    assert_no_location(archive.read(name), fmt)
