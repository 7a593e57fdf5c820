"""Links and modes (issue 24, item 11): a restore reads only the backup folder's own regular
files, an export never writes through a link and writes files only their owner can read, and
the data dir and what a restore puts in it are private."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from app.backup.archive import DATABASE_FILE, MANIFEST
from app.storage.migrations import apply_migrations
from app.wiring.cli import main
from tests.backup.test_backup import tree_digest
from tests.store import live_connection

pytestmark = pytest.mark.own_redis

IDENTITIES = "identities.txt"


def run_cli(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), *args])


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def filled(data_dir: Path) -> Path:
    """A data dir with a message, a journal entry and an identities file."""
    conn = live_connection(data_dir)  # the data dir's store, SQLite or PostgreSQL
    apply_migrations(conn)
    with conn:
        conn.execute("INSERT INTO messages (entry_key, user_id, character_id, turn_id, role, "
                     "text, created, calendar_date) VALUES ('k1', 'local', 'nova', 't1', "
                     "'user', 'Hallo', 1772323200.0, '2026-03-01')")
        conn.execute("INSERT INTO journal_spaces (space_id, user_id, created_at) "
                     "VALUES ('s', 'local', 1.0)")
        conn.execute("INSERT INTO journal_days (day_id, space_id, calendar_date, created_at) "
                     "VALUES ('d', 's', '2026-03-01', 1.0)")
        conn.execute("INSERT INTO journal_entries (entry_id, journal_day_id, current_version_id, "
                     "created_at) VALUES ('e', 'd', 'v', 1.0)")
        conn.execute("INSERT INTO journal_entry_versions (version_id, entry_id, seq, origin, "
                     "text, created_at) VALUES ('v', 'e', 1, 'draft', 'Ein Tag.', 1.0)")
    conn.close()
    (data_dir / IDENTITIES).write_text("Anna Schmidt\n")
    os.chmod(data_dir / IDENTITIES, 0o644)
    return data_dir


@pytest.fixture
def backup_folder(filled: Path, tmp_path: Path) -> Path:
    assert run_cli(filled, "backup", "--to", str(tmp_path / "out")) == 0
    return next((tmp_path / "out").iterdir())


def _link_to_a_copy(folder: Path, name: str, elsewhere: Path) -> None:
    """The file replaced by a link to a file of the same bytes elsewhere: size and checksum
    still match the manifest, only the link is wrong."""
    elsewhere.mkdir(exist_ok=True)
    shutil.move(folder / name, elsewhere / name)
    (folder / name).symlink_to(elsewhere / name)


@pytest.mark.parametrize("name", [DATABASE_FILE, IDENTITIES, MANIFEST, "redis.jsonl"])
def test_a_link_in_a_backup_is_refused(backup_folder, filled, tmp_path, capsys, name):
    _link_to_a_copy(backup_folder, name, tmp_path / "elsewhere")
    before = tree_digest(filled)
    capsys.readouterr()

    assert run_cli(filled, "restore", str(backup_folder), "--yes") == 2

    err = capsys.readouterr().err
    assert f"{name}" in err and "symbolic link" in err and "nothing was changed" in err
    assert tree_digest(filled) == before


def test_a_folder_in_place_of_a_backup_file_is_refused(backup_folder, filled, capsys):
    (backup_folder / IDENTITIES).unlink()
    (backup_folder / IDENTITIES).mkdir()
    assert run_cli(filled, "restore", str(backup_folder), "--yes") == 2
    assert f"{IDENTITIES} is a folder" in capsys.readouterr().err


def test_a_restored_identities_file_and_database_are_private(backup_folder, filled, capsys,
                                                             database_url):
    (filled / IDENTITIES).unlink()
    assert run_cli(filled, "restore", str(backup_folder), "--yes") == 0
    assert (filled / IDENTITIES).read_text() == "Anna Schmidt\n"
    assert mode_of(filled / IDENTITIES) == 0o600
    if database_url is None:
        assert mode_of(filled / DATABASE_FILE) == 0o600
    else:  # the rows went into PostgreSQL: the backup's file copied for it is gone again
        assert not [p.name for p in filled.iterdir() if p.name.startswith(DATABASE_FILE)]


@pytest.mark.parametrize("kind, fmt", [("chat", "json"), ("chat", "md"), ("journal", "json"),
                                       ("memories", "md")])
def test_an_export_is_written_private_and_never_through_a_link(filled, tmp_path, capsys,
                                                               kind, fmt):
    out = tmp_path / f"export.{fmt}"
    out.write_text("old")
    out.chmod(0o644)
    assert run_cli(filled, "export", kind, "--format", fmt, "--out", str(out)) == 0
    assert mode_of(out) == 0o600 and out.read_text() != "old"

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / f"link.{fmt}"
    link.symlink_to(victim)
    capsys.readouterr()
    assert run_cli(filled, "export", kind, "--format", fmt, "--out", str(link)) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep me" and link.is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_journal_files_in_a_folder_are_private_and_a_link_among_them_is_refused(
        filled, tmp_path, capsys):
    folder = tmp_path / "journal"
    folder.mkdir()
    assert run_cli(filled, "export", "journal", "--format", "md", "--out", str(folder)) == 0
    written = folder / "2026-03-01.md"
    assert written.read_text().startswith("# 2026-03-01") and mode_of(written) == 0o600

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    written.unlink()
    written.symlink_to(victim)
    assert run_cli(filled, "export", "journal", "--format", "md", "--out", str(folder)) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert victim.read_text() == "keep me"


def test_an_open_data_dir_is_made_private(filled, tmp_path):
    filled.chmod(0o755)
    assert run_cli(filled, "backup", "--to", str(tmp_path / "b")) == 0
    assert mode_of(filled) == 0o700


def test_the_app_makes_an_open_data_dir_private(tmp_path):
    from tests.procs import AppProcess

    data = tmp_path / "open"
    data.mkdir()
    data.chmod(0o755)
    proc = AppProcess(data).start()
    try:
        assert mode_of(data) == 0o700
    finally:
        assert proc.stop() == 0


@pytest.fixture
def with_characters(filled: Path, tmp_path: Path) -> Path:
    """`filled` with a shared character file and a user's own; and, in its characters
    folder, a link to a file outside the data dir (which no backup may take along)."""
    own = filled / "characters" / "users" / "local"
    own.mkdir(parents=True)
    (filled / "characters" / "lena.toml").write_text('id = "lena"\n')
    (own / "mira.toml").write_text('id = "mira"\n')
    outside = tmp_path / "outside-secret.toml"
    outside.write_text("not the data dir's\n")
    (own / "planted.toml").symlink_to(outside)
    return filled


def test_a_backup_takes_the_characters_folder_without_its_links(with_characters, tmp_path):
    assert run_cli(with_characters, "backup", "--to", str(tmp_path / "out")) == 0
    folder = next((tmp_path / "out").iterdir())
    taken = sorted(p.relative_to(folder).as_posix() for p in (folder / "characters").rglob("*")
                   if p.is_file())
    assert taken == ["characters/lena.toml", "characters/users/local/mira.toml"]


def test_a_linked_characters_folder_in_a_backup_is_refused(with_characters, tmp_path, capsys):
    assert run_cli(with_characters, "backup", "--to", str(tmp_path / "out")) == 0
    folder = next((tmp_path / "out").iterdir())
    # The folder moved elsewhere and linked back: every listed file's size and checksum
    # still match the manifest; only the link is wrong.
    shutil.move(folder / "characters", tmp_path / "elsewhere")
    (folder / "characters").symlink_to(tmp_path / "elsewhere")
    before = tree_digest(with_characters)
    capsys.readouterr()

    assert run_cli(with_characters, "restore", str(folder), "--yes") == 2

    err = capsys.readouterr().err
    assert "characters is a symbolic link" in err and "nothing was changed" in err
    assert tree_digest(with_characters) == before


def test_a_restore_puts_the_characters_folder_back_private(with_characters, tmp_path):
    assert run_cli(with_characters, "backup", "--to", str(tmp_path / "out")) == 0
    folder = next((tmp_path / "out").iterdir())
    shutil.rmtree(with_characters / "characters")
    (with_characters / "characters").mkdir()
    (with_characters / "characters" / "later.toml").write_text('id = "later"\n')

    assert run_cli(with_characters, "restore", str(folder), "--yes") == 0

    restored = with_characters / "characters"
    assert sorted(p.relative_to(restored).as_posix() for p in restored.rglob("*")
                  if p.is_file()) == ["lena.toml", "users/local/mira.toml"]
    assert mode_of(restored / "users" / "local" / "mira.toml") == 0o600
    assert not list(with_characters.glob(".characters.*"))  # no leftovers of the swap
    [safety] = with_characters.glob("restore-safety-*")
    assert (safety / "characters" / "later.toml").read_text() == 'id = "later"\n'
