"""Journal photos in a backup and back (issue 22 §4): the app adds them, the CLI backs the
data dir up (each photo and thumbnail in the manifest with its checksum) and restores it; a
damaged photo refuses the backup."""

from __future__ import annotations

import hashlib
import json

import pytest

from app.backup.archive import MANIFEST
from app.journal.media import MEDIA_FOLDER
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.journal.test_media import image_bytes, new_entry, stored_files, upload

pytestmark = pytest.mark.own_redis  # backups BGSAVE the data dir's own Redis


def run_cli(data_dir, *args: str) -> int:
    return main(["--data-dir", str(data_dir), *args])


async def test_photos_are_backed_up_with_checksums_and_restored(aiohttp_client, settings,
                                                                data_dir, tmp_path, capsys):
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    entry = await new_entry(client)
    raw = image_bytes("JPEG")
    asset = await upload(client, entry["entry_id"], raw)
    await client.close()

    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "out")) == 0
    folder = next((tmp_path / "out").iterdir())
    manifest = json.loads((folder / MANIFEST).read_text())
    listed = {f["name"]: f["sha256"] for f in manifest["files"]}
    photos = {p.relative_to(data_dir).as_posix(): p for p in stored_files(data_dir)}
    assert len(photos) == 2 and all(name.startswith(MEDIA_FOLDER + "/") for name in photos)
    for name, path in photos.items():
        assert listed[name] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert manifest["counts"]["media"] == 1

    # Gone from the data dir (the entry purged, its files with it) …
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    await client.delete(f"/api/journal/entries/{entry['entry_id']}", headers=AUTH)
    assert (await client.delete(f"/api/journal/trash/{entry['entry_id']}",
                                headers=AUTH)).status == 204
    await client.close()
    assert stored_files(data_dir) == []

    # … and back with the restore, served as before.
    assert run_cli(data_dir, "restore", str(folder), "--yes") == 0
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    response = await client.get(asset["url"], headers=AUTH)
    assert response.status == 200 and await response.read() == raw
    shown = await (await client.get(f"/api/journal/entries/{entry['entry_id']}",
                                    headers=AUTH)).json()
    assert [m["asset_id"] for m in shown["media"]] == [asset["asset_id"]]
    await client.close()

    # A photo changed in the backup refuses it whole.
    [photo] = [folder / name for name in photos if not name.endswith(".thumb.webp")]
    photo.write_bytes(photo.read_bytes()[:-1] + b"\0")
    capsys.readouterr()
    assert run_cli(data_dir, "restore", str(folder), "--yes") == 2
    assert "checksum differs" in capsys.readouterr().err
