"""The characters folder in a backup (app/backup/archive.py, restore.py): every file of it —
shared definitions, every user's own with picture and card file — listed in the manifest
with its checksum, checked before a restore, and back after one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from app.backup.archive import MANIFEST, BackupInvalid, verify
from app.characters.book import CharacterBook
from app.characters.service import Characters
from app.characters.store import CharacterStore
from app.core.settings import defaults
from app.storage.database import connect
from app.storage.migrations import apply_migrations
from app.wiring.cli import main

pytestmark = pytest.mark.own_redis  # the CLI starts the data dir's own embedded Redis
CARDS = Path(__file__).resolve().parents[1] / "data" / "cards"


def characters_tree(data_dir: Path) -> dict[str, str]:
    folder = data_dir / "characters"
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def with_characters(data_dir: Path) -> Path:
    conn = connect(data_dir / "novaberg.sqlite3")
    apply_migrations(conn)
    conn.close()
    (data_dir / "characters").mkdir()
    (data_dir / "characters" / "luna.toml").write_text(
        'id = "luna"\nname = "Luna"\nlanguage = "en"\npersona = "You are Luna."\n',
        encoding="utf-8")
    service = Characters(CharacterStore(CharacterBook(defaults(data_dir=str(data_dir)))))
    service.import_card("local", (CARDS / "lena-v2.png").read_bytes())
    service.import_card("anna", (CARDS / "kapitaen-v3.json").read_bytes())
    return data_dir


def backup(data_dir: Path, target: Path) -> Path:
    assert main(["--data-dir", str(data_dir), "backup", "--to", str(target)]) == 0
    return next(target.iterdir())


def test_a_backup_holds_the_characters_folder_and_a_restore_brings_it_back(
        with_characters, tmp_path, capsys):
    data_dir = with_characters
    before = characters_tree(data_dir)
    assert set(before) == {"luna.toml", "users/local/lena-brandt.toml",
                           "users/local/lena-brandt.png", "users/local/lena-brandt.card.json",
                           "users/anna/kapitan-jorin-asmussen.toml",
                           "users/anna/kapitan-jorin-asmussen.card.json"}
    folder = backup(data_dir, tmp_path / "out")
    manifest = json.loads((folder / MANIFEST).read_text())
    listed = {f["name"]: f["sha256"] for f in manifest["files"]}
    assert {f"characters/{name}": digest for name, digest in before.items()}.items() <= \
        listed.items()
    assert manifest["counts"]["characters"] == 3
    verify(folder)

    # The characters change; the restore gives back what the backup holds.
    service = Characters(CharacterStore(CharacterBook(defaults(data_dir=str(data_dir)))))
    service.delete("local", "lena-brandt")
    service.import_card("local", (CARDS / "mira-v1.json").read_bytes())
    assert main(["--data-dir", str(data_dir), "restore", str(folder), "--yes"]) == 0
    assert characters_tree(data_dir) == before
    book = CharacterBook(defaults(data_dir=str(data_dir)))
    assert [d.id for d in book.all("local")] == ["nova", "luna", "lena-brandt"]
    assert book.get("anna", "kapitan-jorin-asmussen").lore is not None
    # The characters as they were before the restore are in the safety folder.
    safety = next(p for p in data_dir.iterdir() if p.name.startswith("restore-safety-"))
    assert (safety / "characters" / "users" / "local" / "mira.toml").is_file()
    verify(safety)


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[5] ^= 1
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage, problem", [
    (lambda f: flip_a_byte(f / "characters" / "luna.toml"),
     "characters/luna.toml: checksum differs"),
    (lambda f: (f / "characters" / "users" / "local" / "extra.toml").write_text("x"),
     "characters/users/local/extra.toml is not in the manifest"),
    (lambda f: (f / "characters" / "users" / "local" / "lena-brandt.png").unlink(),
     "characters/users/local/lena-brandt.png is missing"),
])
def test_a_changed_character_file_fails_the_check(with_characters, tmp_path, damage, problem):
    folder = backup(with_characters, tmp_path / "out")
    damage(folder)
    with pytest.raises(BackupInvalid) as caught:
        verify(folder)
    assert any(problem in p for p in caught.value.problems), caught.value.problems


@pytest.mark.parametrize("name", ["../outside.toml", "characters/../../x", "/etc/passwd",
                                  "other/x.toml", "characters//x", "characters\\x"])
def test_a_manifest_path_out_of_the_backup_is_refused(with_characters, tmp_path, name):
    folder = backup(with_characters, tmp_path / "out")
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"].append({"name": name, "bytes": 1, "sha256": "0" * 64})
    (folder / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(BackupInvalid, match="no valid file list"):
        verify(folder)
