"""The files dir (setting `files_dir`, issue 26): the characters and the journal's photos live
beside the store, in one folder every process of an install points at — a photo uploaded
through one process is served by another, a card imported through one shows on the other —
and the store and the files dir hold one install id: a start on a files dir of another
install refuses in one line (exit 2). A backup carries the photos from the files dir with
their checksums, and a restore puts them back there, the install id kept.

The two-process test needs PostgreSQL; the rest runs on both engines.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from app.journal.media import MEDIA_FOLDER
from app.storage.install import INSTALL_FILE
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.journal.test_media import image_bytes, new_entry, upload
from tests.procs import ROOT, clean_env

CARDS = Path(__file__).resolve().parents[1] / "data" / "cards"


def install_of(conn) -> str:
    return conn.execute("SELECT id FROM _install").fetchone()[0]


@pytest.mark.postgres_only
async def test_a_photo_and_a_card_stored_through_one_process_are_served_by_another(
        aiohttp_client, make_settings, session_redis, tmp_path: Path) -> None:
    files = tmp_path / "shared-volume"
    first = make_settings(files_dir=str(files), redis_url=session_redis.url("shared"))
    second = first.replace(data_dir=str(tmp_path / "second"))
    a, b = [await aiohttp_client(create_app(settings, local_token=TOKEN))
            for settings in (first, second)]
    entry = await new_entry(a)
    raw = image_bytes("JPEG")
    asset = await upload(a, entry["entry_id"], raw)
    served = await b.get(asset["url"], headers=AUTH)
    assert served.status == 200 and await served.read() == raw
    assert (await b.get(asset["thumb_url"], headers=AUTH)).status == 200

    imported = await a.post("/api/characters/import?id=lena", headers=AUTH,
                            data=(CARDS / "lena-v2.png").read_bytes())
    assert imported.status == 201, await imported.text()
    listed = await b.get("/api/characters", headers=AUTH)
    assert "lena" in {c["id"] for c in await listed.json()}
    picture = await b.get("/api/characters/lena/picture", headers=AUTH)
    assert picture.status == 200 and picture.content_type == "image/png"
    assert not (tmp_path / "second" / MEDIA_FOLDER).exists()  # nothing in B's own data dir


async def test_the_first_start_gives_store_and_files_dir_one_install_id(
        aiohttp_client, make_settings, in_store, tmp_path: Path) -> None:
    files = tmp_path / "files"
    await aiohttp_client(create_app(make_settings(files_dir=str(files)), local_token=TOKEN))
    with in_store() as conn:
        stored = install_of(conn)
    assert (files / INSTALL_FILE).read_text().strip() == stored
    # The default files dir is the data dir: it gets the id too.
    assert stored.startswith("nb-")


async def test_a_files_dir_of_another_install_refuses_the_start_in_one_line(
        aiohttp_client, data_dir: Path, tmp_path: Path, make_settings, in_store) -> None:
    own, other = tmp_path / "own-files", tmp_path / "other-files"
    first = await aiohttp_client(create_app(make_settings(files_dir=str(own)),
                                            local_token=TOKEN))
    await first.close()
    with in_store() as conn:
        stored = install_of(conn)
    other.mkdir()
    (other / INSTALL_FILE).write_text("nb-someoneelse00\n")
    env = clean_env()  # on the test's store
    started = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "app", "--no-browser", "--port", "0",
                         "--data-dir", str(data_dir), "--files-dir", str(other)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 2, started.stderr
    err = started.stderr
    assert err.count("\n") == 1 and "belongs to install nb-someoneelse00" in err, err
    assert stored in err and "--files-dir" in err
    with in_store() as conn:  # neither side was changed
        assert install_of(conn) == stored
    assert (other / INSTALL_FILE).read_text() == "nb-someoneelse00\n"
    assert (own / INSTALL_FILE).read_text().strip() == stored


@pytest.mark.own_redis  # a backup BGSAVEs the data dir's embedded Redis
async def test_a_backup_carries_the_files_dirs_photos_and_a_restore_puts_them_back(
        aiohttp_client, make_settings, in_store, tmp_path: Path) -> None:
    files = tmp_path / "files"
    settings = make_settings(files_dir=str(files))
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    entry = await new_entry(client)
    raw = image_bytes("PNG")
    asset = await upload(client, entry["entry_id"], raw, name="see.png")
    made = await client.post("/api/backups", headers=AUTH)
    assert made.status in (200, 201), await made.text()
    backup = Path((await made.json())["path"])
    listed = {f["name"] for f in json.loads(
        (backup / "manifest.json").read_text())["files"]}
    assert any(name.startswith(f"{MEDIA_FOLDER}/local/") for name in listed), listed
    await client.close()
    for photo in (files / MEDIA_FOLDER).rglob("*"):
        if photo.is_file():
            photo.unlink()
    with in_store() as conn:
        before = install_of(conn)
    restored = main(["--data-dir", str(settings.data_path), "--files-dir", str(files),
                     "restore", str(backup), "--yes"])
    assert restored == 0
    again = await aiohttp_client(create_app(settings, local_token=TOKEN))  # one install still
    served = await again.get(asset["url"], headers=AUTH)
    assert served.status == 200 and await served.read() == raw
    with in_store() as conn:
        assert install_of(conn) == before


async def test_a_files_dir_open_to_others_is_tightened_with_one_warning(
        aiohttp_client, make_settings, tmp_path: Path, caplog) -> None:
    """Issue 38 item 14: a files dir of mode 0777 let another local user plant a character
    every user lists; it is checked like the data dir (`make_private`)."""
    files = tmp_path / "open-files"
    files.mkdir()
    files.chmod(0o777)
    await aiohttp_client(create_app(make_settings(files_dir=str(files)), local_token=TOKEN))
    assert files.stat().st_mode & 0o777 == 0o700
    warned = [r.getMessage() for r in caplog.records if "files dir" in r.getMessage()]
    assert warned == [f"files dir {files} was open to others (mode 777); tightened to 0700"]
