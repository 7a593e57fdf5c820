"""`kill -9` during a restore (issue 24, item 4): the data dir then either starts as it was,
or refuses to start with one line that names the way on — finish the restore or go back —
and both ways work, also with a broken database file.

The restore runs as the real command in a subprocess (`python -m app restore DIR --yes`) and
kills itself with SIGKILL at each named step between two of its writes (the setting
`test_crash_at`): while it keeps the current data aside, after that, half-way through copying
the database, after the database's rename (before the install's accounts are carried into
it), after the accounts, after the data files, half-way through loading the Redis keys, and
after all of it (before the marker is removed). The data dir holds state A (a few messages, a
session, a user with a password), the backup state B (20 000 messages, 2 500 Redis keys, an
identities file, no accounts): whichever way on, the install's user is there.

Under `--engine=postgresql` state A's rows are in the test's PostgreSQL database and the
restore loads B's (a backup folder has one format: B's is made from SQLite) into it in one
transaction: killed inside it, before the commit (`restore:rows`), the database holds A as it
was. The steps of SQLite's file (its rename before the accounts are carried, a file broken on
disk) are SQLite's only."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis as redis_sync

from app.auth.accounts import add_user_sync, verify_password
from app.backup.archive import verify
from app.memory import keys
from app.storage.database import connect
from app.storage.datadir import DATABASE_FILE, RESTORE_MARKER, SAFETY_PREFIX
from app.storage.embedded_redis import EmbeddedRedis
from app.storage.migrations import apply_migrations
from app.wiring.cli import main
from tests.procs import ROOT, AppProcess, clean_env, free_port, settings_env
from tests.store import live_connection

pytestmark = pytest.mark.own_redis

A_MESSAGES, B_MESSAGES, B_RECORDS = 30, 20_000, 2_500
WAIT = 60.0


def fill_store(conn: Any, messages: int, word: str) -> None:
    """State `word`'s rows in the store `conn` (closed here): its messages, and for A the
    install's user."""
    try:
        apply_migrations(conn)
        with conn:
            conn.executemany(
                "INSERT INTO messages (entry_key, user_id, character_id, turn_id, role, text, "
                "created, calendar_date) VALUES (?, 'local', 'nova', ?, 'user', ?, ?, "
                "'2026-03-01')",
                [(f"{word}{n}", f"t{word}{n}", f"{word} " * 60, 1772323200.0 + n)
                 for n in range(messages)])
            if word == "A":
                add_user_sync(conn, "anna", "correct horse battery")
    finally:
        conn.close()


def make_state(data: Path, messages: int, word: str, records: int) -> None:
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    fill_store(connect(data / DATABASE_FILE), messages, word)
    (data / "identities.txt").write_text(f"{word} Person\n")
    server = EmbeddedRedis(data / "redis", appendfsync="no")
    server.start()
    try:
        client = redis_sync.Redis.from_url(server.url)
        turn = {"turn_id": f"turn-{word}", "rolle": "user", "inhalt": f"Zustand {word}",
                "zeit": time.time()}
        client.rpush(keys.session_turns("local", "nova"), json.dumps(turn))
        client.expire(keys.session_turns("local", "nova"), 14400)
        pipe = client.pipeline(transaction=False)
        for n in range(records):
            pipe.hset(keys.message_record(f"{word}-{n}"), mapping={"text": word * 20})
        pipe.execute()
        client.close()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def states(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a data dir in state A to copy, a backup folder of state B). Both SQLite: a
    module's fixture is made before the test's environment names its PostgreSQL database;
    `data` puts A's rows there under `--engine=postgresql`."""
    root = tmp_path_factory.mktemp("restore-kill")
    make_state(root / "a", A_MESSAGES, "A", 3)
    make_state(root / "b", B_MESSAGES, "B", B_RECORDS)
    assert main(["--data-dir", str(root / "b"), "backup", "--to", str(root / "backups")]) == 0
    return root / "a", next((root / "backups").iterdir())


def command(data: Path, *args: str, crash_at: str | None = None,
            token: str | None = None) -> subprocess.CompletedProcess:
    env = clean_env(**settings_env({"test_crash_at": crash_at})) if crash_at else clean_env()
    if token:
        env["NOVABERG_TOKEN"] = token
    return subprocess.run([sys.executable, "-m", "app", "--data-dir", str(data), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=WAIT)


def start_refused(data: Path) -> str:
    """Start the app on `data`: it must refuse at once, exit 2, one line on stderr."""
    done = command(data, "--headless", "--host", "127.0.0.1", "--port", str(free_port()),
                   token="proc-token-123")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, output
    return lines[0]


def state_of(data: Path) -> tuple[int, str, list[str], list[str]]:
    """(messages, identities.txt, the session's texts, the users whose password still
    works) as the started app sees them."""
    proc = AppProcess(data).start()
    try:
        status, session = proc.get("/api/characters/nova/session")
        assert status == 200
    finally:
        assert proc.stop() == 0
    count, users = rows_of(data)
    return (count, (data / "identities.txt").read_text(), [t["inhalt"] for t in session["turns"]],
            users)


def rows_of(data: Path) -> tuple[int, list[str]]:
    """(messages, the users whose password still works) in the store of the app on `data`."""
    conn = live_connection(data)
    try:
        count = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        users = [user for user, password_hash in conn.execute("SELECT user_id, password_hash "
                                                              "FROM users ORDER BY user_id")
                 if verify_password("correct horse battery", password_hash)]
    finally:
        conn.close()
    return count, users


# The install's user stays whichever way on: carried into the backup, which has none.
STATE_A = (A_MESSAGES, "A Person\n", ["Zustand A"], ["anna"])
STATE_B = (B_MESSAGES, "B Person\n", ["Zustand B"], ["anna"])


@pytest.fixture
def data(states: tuple[Path, Path], tmp_path: Path, database_url: str | None) -> Path:
    """A data dir in state A: a copy of the module's; under `--engine=postgresql` without its
    SQLite file, A's rows in the test's database instead."""
    path = tmp_path / "data"
    shutil.copytree(states[0], path)
    if database_url is not None:
        for found in path.glob(DATABASE_FILE + "*"):
            found.unlink()
        fill_store(live_connection(path), A_MESSAGES, "A")
    return path


def cut_off(data: Path, backup: Path, point: str) -> None:
    done = command(data, "restore", str(backup), "--yes", crash_at=point)
    assert done.returncode == -9, done.stdout + done.stderr


def test_cut_off_while_keeping_the_data_aside_changes_nothing(states, data):
    cut_off(data, states[1], "restore:saving")
    assert (data / RESTORE_MARKER).exists()

    assert state_of(data) == STATE_A
    assert not (data / RESTORE_MARKER).exists()
    assert not list(data.glob(SAFETY_PREFIX + "*"))


def _engine_of(point: str) -> tuple[pytest.MarkDecorator, ...]:
    if point == "restore:installed":
        return (pytest.mark.sqlite_only("SQLite's file renamed in place, the install's accounts "
                                        "not carried into it yet: a step of the file only"),)
    if point == "restore:rows":
        return (pytest.mark.postgres_only,)  # inside the load's transaction
    return ()


@pytest.mark.parametrize("point, way", [("restore:saved", "back")] + [
    pytest.param(point, way, marks=_engine_of(point))
    for point in ("restore:copying", "restore:installed", "restore:rows", "restore:database",
                  "restore:files", "restore:redis", "restore:loaded")
    for way in ("back", "finish")])
def test_cut_off_half_way_names_both_ways_and_each_works(states, data, point, way,
                                                         database_url):
    backup = states[1]
    cut_off(data, backup, point)

    line = start_refused(data)
    [safety] = data.glob(SAFETY_PREFIX + "*")
    finish = f"novaberg --data-dir {data} restore {backup} --yes"
    back = f"novaberg --data-dir {data} restore {safety} --yes"
    assert "restore" in line and "cut off" in line and finish in line and back in line
    verify(safety)  # the data from before is a complete backup
    # Other commands that write refuse as well, and say the same.
    refused = command(data, "backup")
    assert refused.returncode == 2 and back in refused.stderr
    if point not in ("restore:saved", "restore:copying") and way == "back" \
            and database_url is None:
        database = data / DATABASE_FILE  # broken, say by the disk: the way back works
        database.write_bytes(database.read_bytes()[: os.path.getsize(database) // 3])

    args = (finish if way == "finish" else back).split()[1:]
    done = command(data, *args[2:])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Restored" in done.stdout

    assert state_of(data) == (STATE_B if way == "finish" else STATE_A)
    assert not (data / RESTORE_MARKER).exists()
    assert [p.name for p in data.glob(SAFETY_PREFIX + "*")] == [safety.name]  # no second copy


@pytest.mark.postgres_only
def test_cut_off_inside_the_load_into_postgresql_leaves_every_row_as_it_was(states, data):
    """Killed after B's rows are in, before their commit: PostgreSQL rolls the transaction
    back, the store holds A — the install's user and password included — until a way on is
    taken (the marker still says a restore was cut off)."""
    cut_off(data, states[1], "restore:rows")

    assert (data / RESTORE_MARKER).exists()
    assert rows_of(data) == (A_MESSAGES, ["anna"])


@pytest.mark.sqlite_only("the SQLite file broken on disk; PostgreSQL's files are its server's")
def test_a_broken_database_stops_the_start_with_one_line_and_a_restore_keeps_it(states, data):
    database = data / DATABASE_FILE
    database.write_bytes(database.read_bytes()[: os.path.getsize(database) // 3])

    line = start_refused(data)
    assert "novaberg.sqlite3" in line and "restore" in line

    done = command(data, "restore", str(states[1]), "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    [safety] = data.glob(SAFETY_PREFIX + "*")
    kept = verify(safety)
    assert "damaged-novaberg.sqlite3" in {f["name"] for f in kept.manifest["files"]}
    # The damaged file's accounts cannot be read: the restored data has none.
    assert state_of(data) == (*STATE_B[:3], [])
