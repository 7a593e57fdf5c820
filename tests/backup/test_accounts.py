"""Accounts and restore (issue 24, item 2): a backup plants no login.

A backup that says it holds no accounts must have none: one crafted to carry a password
hash, a token or a password login for `local` is refused, naming the problem, and nothing
changes. When a restore carries the install's accounts into a backup, the install's rows
win. A backup that does bring accounts says so before it is restored, and names them.
"""

from __future__ import annotations

import io
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from app.auth.accounts import hash_password, token_hash, verify_password
from app.backup.archive import DATABASE_FILE, MANIFEST, write_manifest
from app.backup.database import carry_accounts
from app.storage.database import connect
from app.storage.migrations import apply_migrations
from app.wiring.cli import main
from tests.backup.test_backup import tree_digest
from tests.store import live_connection

pytestmark = pytest.mark.own_redis

PASSWORD = "correct horse battery"


def run_cli(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), *args])


def add_user(data_dir: Path, name: str, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
    assert run_cli(data_dir, "user", "add", name, "--password-stdin") == 0
    return capsys.readouterr().out.strip().rsplit(" ", 1)[-1]


def accounts_of(conn: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The users and API tokens of `conn` (closed here): a backup's SQLite file, or the live
    store of a data dir (`live_connection`, SQLite or PostgreSQL)."""
    try:
        return ([tuple(row) for row in
                 conn.execute("SELECT user_id, password_hash FROM users ORDER BY 1")],
                [tuple(row) for row in
                 conn.execute("SELECT token_hash, user_id FROM api_tokens ORDER BY 1")])
    finally:
        conn.close()


def reseal(folder: Path, *, accounts_included: bool) -> None:
    """What a forger does: change the files, then write the manifest anew (its checksums
    then match again)."""
    (folder / MANIFEST).unlink()
    write_manifest(folder, {"users": 1, "days": 0, "entries": 0, "messages": 0,
                            "redis_keys": 0}, accounts_included=accounts_included,
                   now=time.time())


def _replace_hash(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO users VALUES ('anna', ?, 1.0)", (hash_password("forged pass"),))
    return "1 user, 0 API tokens"


def _add_token(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO users VALUES ('anna', 'x', 1.0)")
    conn.execute("INSERT INTO api_tokens VALUES (?, 'anna', 1.0)", (token_hash("planted"),))
    return "1 user, 1 API token"


def _local_login(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO users VALUES ('local', ?, 1.0)", (hash_password("forged pass"),))
    return "local (1 user"


def _only_a_token(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO api_tokens VALUES (?, 'anna', 1.0)", (token_hash("planted"),))
    return "0 users, 1 API token"


@pytest.mark.parametrize("craft", [_replace_hash, _add_token, _local_login, _only_a_token])
def test_a_backup_without_accounts_that_has_some_is_refused(data_dir, tmp_path, monkeypatch,
                                                             capsys, craft):
    token = add_user(data_dir, "anna", monkeypatch, capsys)
    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "out")) == 0
    folder = next((tmp_path / "out").iterdir())
    conn = sqlite3.connect(folder / DATABASE_FILE)
    with conn:
        expected = craft(conn)
    conn.close()
    reseal(folder, accounts_included=False)
    before = tree_digest(data_dir)
    accounts_before = accounts_of(live_connection(data_dir))
    capsys.readouterr()

    assert run_cli(data_dir, "restore", str(folder), "--yes") == 2

    err = capsys.readouterr().err
    assert "holds no accounts" in err and expected in err and "nothing was changed" in err
    assert tree_digest(data_dir) == before
    users, tokens = accounts_of(live_connection(data_dir))
    assert (users, tokens) == accounts_before
    assert verify_password(PASSWORD, dict(users)["anna"])
    assert [t for t, _ in tokens] == [token_hash(token)]


def test_carrying_the_install_accounts_replaces_those_of_the_target(tmp_path):
    """The install's rows win over anything the restored database has of the same name."""
    ours, theirs = tmp_path / "ours.sqlite3", tmp_path / "theirs.sqlite3"
    for path, password, token in ((ours, "our pass", "our-token"),
                                  (theirs, "their pass", "their-token")):
        conn = connect(path)
        apply_migrations(conn)
        with conn:
            conn.execute("INSERT INTO users VALUES ('anna', ?, 1.0)", (hash_password(password),))
            conn.execute("INSERT INTO api_tokens VALUES (?, 'anna', 1.0)", (token_hash(token),))
        if path == theirs:
            with conn:
                conn.execute("INSERT INTO users VALUES ('mallory', 'x', 1.0)")
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.close()

    assert carry_accounts(theirs, ours) == 1

    users, tokens = accounts_of(sqlite3.connect(theirs))
    assert [name for name, _ in users] == ["anna"]
    assert verify_password("our pass", users[0][1])
    assert tokens == [(token_hash("our-token"), "anna")]


def test_a_backup_with_accounts_says_so_and_names_them(data_dir, tmp_path, monkeypatch, capsys):
    for name in ("anna", "bob"):
        add_user(data_dir, name, monkeypatch, capsys)
    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "full"),
                   "--include-accounts") == 0
    full = next((tmp_path / "full").iterdir())
    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "plain")) == 0
    plain = next((tmp_path / "plain").iterdir())
    capsys.readouterr()
    monkeypatch.setattr("builtins.input", lambda: "n")

    assert run_cli(data_dir, "restore", str(full)) == 1
    question = capsys.readouterr().out
    assert "HOLDS ACCOUNTS" in question and "anna, bob (2 users, 2 API tokens)" in question
    assert "are kept" not in question

    assert run_cli(data_dir, "restore", str(plain)) == 1
    question = capsys.readouterr().out
    assert "holds no accounts" in question and "anna" not in question


def _local_login_beside_real_accounts(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO users VALUES ('local', ?, 1.0)", (hash_password("forged pass"),))


def _local_token_beside_real_accounts(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO api_tokens VALUES (?, 'local', 1.0)", (token_hash("planted"),))


def _a_name_no_install_writes(conn: sqlite3.Connection) -> None:
    conn.execute("INSERT INTO users VALUES (?, ?, 1.0)",
                 ("x\nNovaberg is running", hash_password("forged pass")))


@pytest.mark.parametrize("craft", [_local_login_beside_real_accounts,
                                   _local_token_beside_real_accounts,
                                   _a_name_no_install_writes])
def test_a_backup_with_accounts_cannot_bring_an_account_no_install_writes(
        data_dir, tmp_path, monkeypatch, capsys, craft):
    """Found by probing (walk): a backup that owns up to its accounts could still carry a
    password login or an API token of `local`, the headless admin — `novaberg user add`
    refuses that name, so no install writes such a row; restored, it gave whoever forged
    the backup the admin's routes. Such a backup is refused whole, as a crafted one."""
    token = add_user(data_dir, "anna", monkeypatch, capsys)
    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "out"), "--include-accounts") == 0
    folder = next((tmp_path / "out").iterdir())
    conn = sqlite3.connect(folder / DATABASE_FILE)
    with conn:
        craft(conn)
    conn.close()
    reseal(folder, accounts_included=True)
    before = tree_digest(data_dir)
    capsys.readouterr()

    assert run_cli(data_dir, "restore", str(folder), "--yes") == 2

    err = capsys.readouterr().err
    assert "no install writes" in err and "nothing was changed" in err
    assert tree_digest(data_dir) == before
    users, tokens = accounts_of(live_connection(data_dir))
    assert [name for name, _ in users] == ["anna"]
    assert [t for t, _ in tokens] == [token_hash(token)]
