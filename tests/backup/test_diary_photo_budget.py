"""A Day One zip cannot amplify (issue 38 item 5): the pixels and decoded bytes its photos'
headers declare are counted before anything is written, against a budget by the archive's
size; a small zip of header bombs is refused whole, 413 `import_too_large`, the budget named,
no entry and no photo stored — through the real server, and through the real CLI."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from typing import Any

import pytest

from app.backup.diary_import import IMPORT_FLOOR_PIXELS, IMPORT_PIXELS_PER_BYTE
from app.storage.datadir import DATABASE_FILE
from app.wiring.cli import main
from tests.backup.diary_support import dayone_bytes, dayone_document, dayone_zip, zipped
from tests.backup.test_diary_import import ROUTE, upload
from tests.journal.test_media_limits import header_bomb


def bomb_zip(count: int, side: int) -> bytes:
    """Day One's zip whose first entry names `count` photos, each a ~100-byte PNG whose
    header declares about side × side pixels (each unlike the others, for its md5)."""
    document = dayone_document()
    files: dict[str, bytes] = {}
    photos: list[dict[str, Any]] = []
    for n in range(count):
        data = header_bomb(side, side + n)
        md5 = hashlib.md5(data, usedforsecurity=False).hexdigest()
        files[f"photos/{md5}.png"] = data
        photos.append({"identifier": f"{n:032X}", "md5": md5, "type": "png"})
    document["entries"][0]["photos"] = photos
    return zipped({"Journal.json": dayone_bytes(document), **files})


def stored(in_store: Any) -> tuple[int, int]:
    with in_store() as conn:
        return (
            conn.execute("SELECT COUNT(*) FROM journal_entries").fetchone()[0],
            conn.execute("SELECT COUNT(*) FROM media_assets").fetchone()[0],
        )


@pytest.mark.parametrize("side", [6000, 8192])  # under and over the per-photo limit
async def test_a_small_zip_of_header_bombs_is_refused_whole(client, in_store, caplog, side):
    body = bomb_zip(20, side)
    assert len(body) < 12_000 and 20 * side * side > IMPORT_FLOOR_PIXELS
    started = time.perf_counter()
    answer = await upload(client, body, status=413)
    assert time.perf_counter() - started < 3.0
    assert answer["error"]["code"] == "import_too_large"
    message = answer["error"]["message"]
    assert "20 photos" in message and f"at most {IMPORT_FLOOR_PIXELS}" in message
    assert "nothing was imported" in message
    assert stored(in_store) == (0, 0)
    [warning] = [
        r
        for r in caplog.records
        if r.getMessage() == "diary import refused: photos over the budget"
    ]
    assert warning.levelname == "WARNING"
    assert warning.fields["limit_pixels"] == IMPORT_FLOOR_PIXELS  # type: ignore[attr-defined]


async def test_photos_within_the_budget_are_each_taken_to_the_media_module(client, in_store):
    """Four 36 MP bombs (144 MP): under the floor, so the import goes on and the media
    module refuses each (they do not decode), naming them; the entries are imported."""
    answer = await upload(client, bomb_zip(4, 6000), status=200)
    assert answer["imported"] == 5
    bombs = [p for p in answer["photos"]["items"] if p["type"] == "png"]
    assert [p["reason"] for p in bombs] == ["invalid_image"] * 4
    assert stored(in_store) == (4, 0)
    assert IMPORT_PIXELS_PER_BYTE * 64 * 1024 * 1024 > IMPORT_FLOOR_PIXELS  # a full-size zip


def test_the_cli_refuses_the_bomb_zip_and_writes_nothing(tmp_path, data_dir, capsys):
    path = tmp_path / "dayone.zip"
    path.write_bytes(bomb_zip(20, 6000))
    assert main(["--data-dir", str(data_dir), "import-diary", str(path)]) == 2
    assert "nothing was imported" in capsys.readouterr().err
    database = data_dir / DATABASE_FILE  # refused before the store is opened
    assert not database.exists() or sqlite3.connect(database).execute(
        "SELECT COUNT(*) FROM journal_entries"
    ).fetchone() == (0,)


async def test_photos_past_the_imports_time_are_named_and_not_added(client, in_store, monkeypatch):
    from app.backup import diary_import

    monkeypatch.setattr(diary_import, "IMPORT_PHOTO_SECONDS", -1)  # the time already spent
    answer = await upload(client, dayone_zip())
    assert answer["imported"] == 5 and answer["photos"]["imported"] == 0
    assert {p["reason"] for p in answer["photos"]["items"]} == {"import_time_budget"}
    assert stored(in_store)[1] == 0
