"""Photo bombs and names (issue 38 items 4 and 13) through the real server: a header that
declares too many pixels is refused before anything is decoded, the process decodes at most
`DECODE_BUDGET` pixels at once, and an export names a photo by what its bytes are."""

from __future__ import annotations

import asyncio
import io
import json
import os
import struct
import subprocess
import sys
import threading
import time
import zipfile
import zlib
from typing import Any

import pytest
from PIL import Image

from app.journal.media import DECODE_BUDGET, MAX_PIXELS
from app.journal.pixels import PixelBudget
from tests.conftest import AUTH
from tests.waiting import until
from tests.journal.test_api import jclient, journal_app  # noqa: F401 — fixtures
from tests.journal.test_media import DATE, image_bytes, media_rows, new_entry, stored_files, upload  # noqa: F401


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def header_bomb(width: int = 8192, height: int = 8192) -> bytes:
    """A PNG of about a hundred bytes whose header says `width` × `height` RGB pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\0" * 64, 9)
    return (
        b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")
    )


def flat_png(side: int) -> bytes:
    """A real, whole PNG of side × side grey pixels (small on disk, large decoded)."""
    out = io.BytesIO()
    Image.new("L", (side, side), 128).save(out, format="PNG", compress_level=1)
    return out.getvalue()


async def test_a_header_bomb_is_refused_before_it_is_decoded(client, data_dir, media_rows, caplog):
    bomb = header_bomb()
    assert len(bomb) < 120 and 8192 * 8192 > MAX_PIXELS
    entry = await new_entry(client)
    started = time.perf_counter()
    answer = await upload(client, entry["entry_id"], bomb, name="bombe.png", status=413)
    assert time.perf_counter() - started < 1.0
    assert answer["error"]["code"] == "image_too_large"
    assert "8192 × 8192" in answer["error"]["message"]
    assert str(MAX_PIXELS) in answer["error"]["message"]
    assert stored_files(data_dir) == [] and media_rows() == 0
    [record] = [r for r in caplog.records if r.getMessage() == "photo refused: too many pixels"]
    assert record.levelname == "WARNING" and record.fields["limit"] == MAX_PIXELS  # type: ignore[attr-defined]


def test_the_header_bomb_costs_no_decoding_memory():
    """In a fresh process (its peak memory its own): refusing the bomb grows the peak RSS by
    less than a tenth of what decoding its 8192 × 8192 pixels would take (~200 MB)."""
    script = (
        "import resource, sys\n"
        "from app.journal.media import MediaRefused, decode\n"
        "from tests.journal.test_media_limits import header_bomb\n"
        "bomb = header_bomb()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "for _ in range(3):\n"
        "    try:\n"
        "        decode(bomb, keep_location=False)\n"
        "    except MediaRefused as exc:\n"
        "        assert exc.code == 'image_too_large', exc.code\n"
        "    else:\n"
        "        sys.exit('taken')\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 20_000  # KiB


@pytest.mark.parametrize("side", [6400, 7000])  # 41 and 49 megapixels: over the limit
async def test_a_photo_over_the_pixel_limit_is_refused(client, media_rows, side):
    entry = await new_entry(client)
    answer = await upload(
        client, entry["entry_id"], header_bomb(side, side), name="gross.png", status=413
    )
    assert answer["error"]["code"] == "image_too_large" and media_rows() == 0


async def test_concurrent_uploads_stay_within_the_decode_budget(client, media_rows):
    """Three 30-megapixel photos at once: all taken, never more than the budget decoding."""
    side = 5477  # 30 megapixels: two fit the budget, the third waits
    assert 3 * side * side > DECODE_BUDGET.capacity >= 2 * side * side
    raw = flat_png(side)
    entry = await new_entry(client)
    DECODE_BUDGET.reset_peak()
    answers = await asyncio.gather(
        *[upload(client, entry["entry_id"], raw, name=f"weit{n}.png") for n in range(3)]
    )
    assert [a["width"] for a in answers] == [side] * 3 and media_rows() == 3
    assert 2 * side * side <= DECODE_BUDGET.peak <= DECODE_BUDGET.capacity
    assert DECODE_BUDGET.held == 0


async def test_the_budget_holds_a_thread_until_the_pixels_are_free():
    budget = PixelBudget(100)
    first_in, release, second_in = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with budget.hold(60):
            first_in.set()
            release.wait(10)

    def second() -> None:
        with budget.hold(60):
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert first_in.wait(10)
    threads[1].start()
    await until(lambda: len(budget._waiting) == 1)
    assert not second_in.is_set() and budget.held == 60
    release.set()
    for thread in threads:
        thread.join(10)
    assert second_in.is_set() and budget.peak == 60 and budget.held == 0


async def test_a_waiter_cancelled_takes_nothing_and_a_large_one_is_not_passed():
    budget = PixelBudget(100)
    order: list[str] = []
    release = asyncio.Event()

    async def take(name: str, pixels: int, wait: bool = False) -> None:
        async with budget.hold_async(pixels):
            order.append(name)
            if wait:
                await release.wait()

    first = asyncio.create_task(take("first", 70, wait=True))
    await until(lambda: order == ["first"])
    cancelled = asyncio.create_task(take("cancelled", 50))
    large = asyncio.create_task(take("large", 1000))  # held as the whole budget
    small = asyncio.create_task(take("small", 10))  # fits now, but waits behind "large"
    await until(lambda: len(budget._waiting) == 3)
    cancelled.cancel()
    await until(lambda: len(budget._waiting) == 2)
    release.set()
    await asyncio.gather(first, large, small)
    assert cancelled.cancelled() and order == ["first", "large", "small"]
    assert budget.held == 0 and budget.peak == 100


async def test_a_photo_named_html_is_stored_and_exported_by_its_kind(client, in_store):
    entry = await new_entry(client)
    raw = image_bytes("PNG")
    asset = await upload(client, entry["entry_id"], raw, name="evil.html")
    assert asset["name"] == "evil.png" and asset["kind"] == "png"
    jpeg = await upload(client, entry["entry_id"], image_bytes("JPEG"), name="foto.JPEG")
    assert jpeg["name"] == "foto.JPEG"  # an extension that says the kind stays
    nameless = await upload(client, entry["entry_id"], image_bytes("WEBP"), name="ohne")
    assert nameless["name"] == "ohne.webp"
    second = await upload(client, entry["entry_id"], image_bytes("JPEG"), name="alt.jpg")
    assert second["name"] == "alt.jpg"
    # A row stored before the rule: exported by its kind too, beside one of that name.
    with in_store() as conn:
        conn.execute(
            "UPDATE media_assets SET name = 'alt.html' WHERE asset_id = ?", (jpeg["asset_id"],)
        )
    response = await client.get("/api/exports/journal?format=json&per=entry", headers=AUTH)
    archive = zipfile.ZipFile(io.BytesIO(await response.read()))
    names = sorted(archive.namelist())
    assert not [n for n in names if n.endswith(".html")]
    assert archive.read(f"{DATE}/evil.png") == raw
    document: dict[str, Any] = json.loads(archive.read(f"{DATE}.json"))
    assert [m["name"] for m in document["entries"][0]["media"]] == [
        "evil.png",
        "alt.jpg",
        "ohne.webp",
        "alt (2).jpg",
    ]
    assert {f"{DATE}/{n}" for n in ("evil.png", "alt.jpg", "ohne.webp", "alt (2).jpg")} <= set(
        names
    )


@pytest.mark.parametrize(
    ("orientation", "size", "thumb"),
    [(1, (640, 480), (320, 240)), (6, (480, 640), (240, 320)), (None, (640, 480), (320, 240))],
)
async def test_a_photo_is_measured_and_thumbnailed_upright(client, orientation, size, thumb):
    image = Image.new("RGB", (640, 480), "teal")
    exif = Image.Exif()
    if orientation is not None:
        exif[0x0112] = orientation
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    entry = await new_entry(client)
    asset = await upload(client, entry["entry_id"], out.getvalue(), name="hoch.jpg")
    assert (asset["width"], asset["height"]) == size
    small = await (await client.get(asset["thumb_url"], headers=AUTH)).read()
    assert Image.open(io.BytesIO(small)).size == thumb


async def test_photos_are_decoded_in_another_process_and_a_dead_one_is_replaced():
    from app.journal.decoders import DecoderStopped, in_worker

    assert await in_worker(2, os.getpid) != os.getpid()
    with pytest.raises(DecoderStopped):
        await in_worker(2, os._exit, 1)  # a worker killed under a photo (out of memory)
    assert await in_worker(2, os.getpid) != os.getpid()  # the next photo: a fresh pool


async def test_past_the_waiting_bound_an_upload_is_refused_busy(client, media_rows):
    """The budget taken and DECODE_WAITING decodes waiting: the next upload is refused at
    once (503 decoder_busy, Retry-After), not queued with its bytes held."""
    from app.journal.media import DECODE_RETRY_S, DECODE_WAITING

    entry = await new_entry(client)
    release = asyncio.Event()

    async def wait_in_line() -> None:
        async with DECODE_BUDGET.hold_async(1):
            await release.wait()

    async with DECODE_BUDGET.hold_async(DECODE_BUDGET.capacity):
        waiting = [asyncio.create_task(wait_in_line()) for _ in range(DECODE_WAITING)]
        await until(lambda: len(DECODE_BUDGET._waiting) == DECODE_WAITING)
        response = await client.post(
            f"/api/journal/entries/{entry['entry_id']}/media",
            params={"name": "see.png"},
            data=image_bytes("PNG"),
            headers=AUTH,
        )
        answer = await response.json()
        assert response.status == 503 and answer["error"]["code"] == "decoder_busy"
        assert response.headers["Retry-After"] == str(DECODE_RETRY_S)
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
    assert DECODE_BUDGET.held == 0 and not DECODE_BUDGET._waiting and media_rows() == 0
    assert (await upload(client, entry["entry_id"], image_bytes("PNG")))["kind"] == "png"


def test_the_budget_refuses_past_its_waiting_bound():
    from app.journal.pixels import BudgetFull

    budget = PixelBudget(100, max_waiting=0)
    with budget.hold(100), pytest.raises(BudgetFull):
        with budget.hold(1):
            pass
    assert budget.held == 0
