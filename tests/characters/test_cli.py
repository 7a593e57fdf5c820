"""`novaberg character import | export` (app/characters/cli.py) in-process: a card becomes
the user's own character; a bad card, a taken id, an unknown user or a running app is one line
and exit code 2 with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.auth.accounts import add_user_sync
from app.storage.datadir import DataDirLock
from app.storage.migrations import apply_migrations
from app.wiring.cli import main
from tests.store import live_connection

CARDS = Path(__file__).resolve().parents[1] / "data" / "cards"


def run(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), "character", *args])


def own(data_dir: Path, user: str = "local") -> list[str]:
    folder = data_dir / "characters" / "users" / user
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_import_then_export_then_import_again(data_dir, tmp_path, capsys):
    assert run(data_dir, "import", str(CARDS / "lena-v2.png")) == 0
    out = capsys.readouterr().out
    assert out.startswith("character lena-brandt imported: Lena Brandt (en, 5 lorebook "
                          "entries, with a picture)")
    assert own(data_dir) == ["lena-brandt.card.json", "lena-brandt.png", "lena-brandt.toml"]
    card = tmp_path / "lena.json"
    assert run(data_dir, "export", "lena-brandt", "--spec", "v2", "--format", "json",
               "--out", str(card)) == 0
    assert json.loads(card.read_text())["data"]["name"] == "Lena Brandt"
    assert run(data_dir, "import", str(card), "--id", "lena") == 0
    assert "lena.toml" in own(data_dir)


@pytest.mark.parametrize("content, problem", [
    (b"plain text", "not valid JSON"),
    (b'{"spec": "chara_card_v2", "data": {"name": "X"}}', "nothing for the character"),
])
def test_a_bad_card_is_one_line_and_exit_2(data_dir, tmp_path, capsys, content, problem):
    file = tmp_path / "bad.card"
    file.write_bytes(content)
    assert run(data_dir, "import", str(file)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("novaberg: ") and problem in err
    assert own(data_dir) == []


def test_a_taken_id_an_unknown_user_a_missing_file_and_a_big_card_are_refused(
        data_dir, tmp_path, capsys, monkeypatch):
    assert run(data_dir, "import", str(CARDS / "mira-v1.json")) == 0
    before = own(data_dir)
    assert run(data_dir, "import", str(CARDS / "mira-v1.json")) == 2
    assert "'mira' exists already" in capsys.readouterr().err
    assert run(data_dir, "import", str(CARDS / "mira-v1.json"), "--user", "nobody") == 2
    assert "no user 'nobody'" in capsys.readouterr().err
    assert run(data_dir, "import", str(tmp_path / "missing.png")) == 2
    assert "cannot read" in capsys.readouterr().err
    monkeypatch.setenv("NOVABERG_CHARACTER_UPLOAD_MAX_BYTES", "2048")
    assert run(data_dir, "import", str(CARDS / "lena-v2.png")) == 2
    assert "setting character_upload_max_bytes" in capsys.readouterr().err
    assert own(data_dir) == before


def test_a_headless_users_character_goes_to_that_user(data_dir, capsys):
    conn = live_connection(data_dir)  # the store the command reads: SQLite or PostgreSQL
    apply_migrations(conn)
    with conn:
        add_user_sync(conn, "anna", "password123")
    conn.close()
    assert run(data_dir, "import", str(CARDS / "mira-v1.json"), "--user", "anna") == 0
    assert own(data_dir, "anna") == ["mira.card.json", "mira.toml"] and own(data_dir) == []


def test_import_is_refused_while_an_app_holds_the_data_dir(data_dir, capsys):
    lock = DataDirLock(data_dir)
    lock.acquire()
    try:
        assert run(data_dir, "import", str(CARDS / "mira-v1.json")) == 2
    finally:
        lock.release()
    err = capsys.readouterr().err
    assert "is in use" in err and "import the card in the page" in err
    assert own(data_dir) == []
    # Export only reads: it works while the app runs.
    lock.acquire()
    try:
        assert run(data_dir, "export", "nova", "--out", str(data_dir.parent / "nova.png")) == 0
    finally:
        lock.release()
    assert (data_dir.parent / "nova.png").read_bytes().startswith(b"\x89PNG")
