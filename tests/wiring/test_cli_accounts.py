"""Issue 11, item 10: API tokens can be listed and revoked, users deleted with their data,
and the SQLite file is owner-only."""

from __future__ import annotations

import asyncio
import io
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis as sync_redis

from app.storage.datadir import LOCK_FILE, DataDirInUse, DataDirLock
from app.storage.embedded_redis import EmbeddedRedis
from app.wiring.cli import main
from app.wiring.server import DATABASE_FILE, REDIS_DIR, create_app
from tests.procs import ROOT, AppProcess, clean_env, http, wait_for
from tests.store import live_connection
from tests.wiring.test_cli import run_cli

PASSWORD = "correct horse battery"


def add_user(data: Path, name: str) -> str:
    result = run_cli("--data-dir", str(data), "user", "add", name, "--password-stdin",
                     stdin=PASSWORD + "\n")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().rsplit(" ", 1)[1]


async def test_tokens_can_be_listed_and_revoked(data_dir, aiohttp_client, make_settings):
    data = data_dir
    anna, bob = add_user(data, "anna"), add_user(data, "bob")
    listing = run_cli("--data-dir", str(data), "token", "list")
    rows = [line.split() for line in listing.stdout.splitlines()]
    assert listing.returncode == 0 and [r[1] for r in rows] == ["anna", "bob"]
    assert anna not in listing.stdout  # ids, never the tokens
    only_anna = run_cli("--data-dir", str(data), "token", "list", "anna")
    assert [line.split()[1] for line in only_anna.stdout.splitlines()] == ["anna"]
    assert run_cli("--data-dir", str(data), "token", "revoke", "zz").returncode == 2

    revoked = run_cli("--data-dir", str(data), "token", "revoke", rows[0][0])
    assert revoked.returncode == 0, revoked.stderr
    client = await aiohttp_client(create_app(make_settings(headless=True)))
    gone = await client.get("/api/me", headers={"Authorization": f"Bearer {anna}"})
    kept = await client.get("/api/me", headers={"Authorization": f"Bearer {bob}"})
    assert gone.status == 401 and kept.status == 200


# `user delete` and the check below start the data dir's own embedded Redis (tests/conftest.py).
@pytest.mark.own_redis
async def test_user_delete_removes_the_user_and_their_data(data_dir, aiohttp_client,
                                                           make_settings):
    data = data_dir
    anna, bob = add_user(data, "anna"), add_user(data, "bob")
    client = await aiohttp_client(create_app(make_settings(headless=True, llm_provider="offline")))
    for token in (anna, bob):
        auth = {"Authorization": f"Bearer {token}"}
        assert (await client.post("/api/characters/nova/messages", json={"text": "Hallo"},
                                  headers=auth)).status == 202
        assert (await client.post("/api/characters/nova/reminders", json={
            "text": "Zahnarzt", "due_at": time.time() + 86400}, headers=auth)).status == 201
        # Journal rows reach the user only through foreign keys (day → space → user_id).
        imported = await client.post("/api/journal/import", headers=auth, json={
            "date": "2026-11-30", "messages": [{"role": "user", "text": "Tagebuchzeile"}]})
        assert imported.status == 201
        entry = await client.post("/api/journal/entries", headers=auth, json={
            "date": "2026-11-30", "text": "Eintrag"})
        assert entry.status == 201
    assert (await client.post("/api/login", json={"name": "anna", "password": PASSWORD})).status == 200
    from app.api.app_keys import RUNTIME

    await client.app[RUNTIME].idle()
    busy = await asyncio.to_thread(run_cli, "--data-dir", str(data), "user", "delete", "anna")
    assert busy.returncode == 2 and "stop the app first" in busy.stderr
    await client.close()

    result = await asyncio.to_thread(run_cli, "--data-dir", str(data), "user", "delete", "anna")
    assert result.returncode == 0, result.stderr
    conn = live_connection(data)
    for table in ("users", "api_tokens", "messages", "journal_spaces"):
        users = {row[0] for row in conn.execute(f"SELECT user_id FROM {table}")}
        assert "anna" not in users and "bob" in users, table
    for table in ("journal_days", "journal_conversations", "journal_messages",
                  "journal_entries", "journal_entry_versions"):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == 1, table
    conn.close()
    server = EmbeddedRedis(data / REDIS_DIR, appendfsync="no")
    server.start()
    try:
        redis = sync_redis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
        everything = [k for k in redis.scan_iter(count=1000)]
        members = [*redis.smembers("pairs:known"),
                   *redis.zrange("reminders:due", 0, -1)]
        sessions = [redis.get(k) for k in redis.scan_iter(match="auth_session:*")]
        redis.close()
    finally:
        server.stop()
    assert not [k for k in everything if ":anna:" in k or k.endswith(":anna")], everything
    assert any(":bob:" in k for k in everything)  # the other user's data stays
    assert not [m for m in members if m.startswith("anna:")] and members
    assert "anna" not in sessions
    assert run_cli("--data-dir", str(data), "user", "delete", "anna").returncode == 2


def users_in(data: Path) -> list[str]:
    conn = live_connection(data)
    try:
        return [row[0] for row in conn.execute("SELECT user_id FROM users ORDER BY user_id")]
    finally:
        conn.close()


@pytest.fixture
def novaberg(capsys, monkeypatch):
    """The command line in this process: `novaberg(*args, stdin=…)` → (exit code, out, err)."""
    def run(*args: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.mark.sqlite_only("the data dir's lock guards its SQLite; a shared PostgreSQL store is "
                         "written beside the processes (tests/wiring/test_cli_shared_store.py)")
def test_commands_that_write_refuse_beside_a_running_app_and_go_through_without_one(
        data_dir, novaberg):
    """One SQLite writer: `user add`, `token revoke` and `user delete` hold the data dir's lock
    (a running app holds it): beside the app each refuses with one line and exit 2, and writes
    nothing; `token list` only reads and answers. Without the app they go through."""
    data = ("--data-dir", str(data_dir))
    code, added, _ = novaberg(*data, "user", "add", "anna", "--password-stdin",
                              stdin=PASSWORD + "\n")
    assert code == 0
    anna = added.split()[-1]
    [[anna_token_id, _, _, _]] = [line.split() for line in
                                  novaberg(*data, "token", "list")[1].splitlines()]
    app = AppProcess(data_dir, token=None).start()
    try:
        for command in (("user", "add", "bob", "--password-stdin"),
                        ("token", "revoke", anna_token_id), ("user", "delete", "anna")):
            assert novaberg(*data, *command, stdin=PASSWORD + "\n") == (2, "", (
                f"novaberg: data dir {data_dir} is in use by pid {app.pid}: stop the app "
                "first\n")), command
        code, listing, _ = novaberg(*data, "token", "list")
        assert code == 0 and [line.split()[:2] for line in listing.splitlines()] == [
            [anna_token_id, "anna"]]
        assert http("GET", app.url + "/api/me", token=anna)[1]["user_id"] == "anna"
        assert http("POST", app.url + "/api/login",
                    body={"name": "bob", "password": PASSWORD})[0] == 401
    finally:
        assert app.stop() == 0
    assert users_in(data_dir) == ["anna"]

    assert novaberg(*data, "user", "add", "bob", "--password-stdin", stdin=PASSWORD + "\n")[0] == 0
    assert novaberg(*data, "token", "revoke", anna_token_id)[:2] == (
        0, f"token {anna_token_id} revoked\n")
    assert users_in(data_dir) == ["anna", "bob"]
    assert [line.split()[1] for line in novaberg(*data, "token", "list")[1].splitlines()] == [
        "bob"]


@pytest.mark.sqlite_only("the data dir's lock guards its SQLite (on PostgreSQL the database "
                         "keeps writers apart: tests/wiring/test_cli_shared_store.py)")
def test_a_writing_command_holds_the_data_dir_while_it_writes(data_dir):
    """While `user add` waits for its password it holds the lock, so no app starts meanwhile
    (an app's start takes the same lock); the user is added once the password comes."""
    adding = subprocess.Popen([sys.executable, "-m", "app", "--data-dir", str(data_dir), "user",
                               "add", "anna", "--password-stdin"], cwd=ROOT, env=clean_env(),
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (data_dir / LOCK_FILE).exists()
                        and (data_dir / LOCK_FILE).read_text() == str(adding.pid))
        with pytest.raises(DataDirInUse, match=f"is in use by pid {adding.pid}$"):
            DataDirLock(data_dir).acquire()
        out, err = adding.communicate(PASSWORD + "\n", timeout=30)
    finally:
        if adding.poll() is None:
            adding.kill()
    assert adding.returncode == 0, err
    assert out.startswith("user anna added") and users_in(data_dir) == ["anna"]
    lock = DataDirLock(data_dir)
    lock.acquire()  # and let go when it is done
    lock.release()


@pytest.mark.sqlite_only("the data dir's SQLite file and its mode")
async def test_the_database_file_is_owner_only(client, settings):
    mode = stat.S_IMODE((settings.data_path / DATABASE_FILE).stat().st_mode)
    assert mode == 0o600


# --- item 13: a quiet, readable desktop terminal; JSON for headless -----------------------------

def run_desktop(data: Path, *extra: str) -> str:
    """Start the desktop app, send one message through it, stop it; its whole stderr. The token
    comes the way the start recommends (NOVABERG_TOKEN): `--token` would add its warning line."""
    import signal
    import subprocess
    import sys

    from tests.procs import ROOT, clean_env, free_port, http, wait_for

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "app", "--no-browser", "--data-dir", str(data),
                             "--port", str(port), *extra],
                            cwd=ROOT, env=clean_env(NOVABERG_LLM_PROVIDER="offline",
                                                    NOVABERG_TOKEN="tok-0123456789"),
                            stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            try:
                return http("GET", url + "/api/health")[0] == 200
            except OSError:
                return False

        assert wait_for(healthy, timeout=30)
        status, body = http("POST", url + "/api/characters/nova/messages", token="tok-0123456789",
                            body={"text": "Hallo"})
        assert status == 202
        assert wait_for(lambda: http("GET", f"{url}/api/messages/{body['message_id']}",
                                     token="tok-0123456789")[1]["state"] == "delivered",
                        timeout=30)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    return err


def test_desktop_terminal_is_quiet_and_readable(data_dir):
    err = run_desktop(data_dir)
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[0].startswith("Novaberg is running: http://127.0.0.1:")
    assert not [line for line in lines if line.lstrip().startswith("{")], lines  # no JSON
    assert "transitions" not in err and "Finished processing" not in err
    assert len(lines) <= 4, lines  # the URL, the token, nothing per request or turn


def test_log_format_json_on_request(data_dir):
    err = run_desktop(data_dir, "--log-format", "json", "--log-level", "info")
    assert any(line.startswith('{"ts"') for line in err.splitlines())


@pytest.mark.sqlite_only("where `--data-dir` stands shows in the SQLite file it names: on "
                         "PostgreSQL `user add` writes nothing in the data dir")
def test_data_dir_may_follow_the_subcommand(tmp_path):
    data = tmp_path / "after"
    result = run_cli("user", "add", "anna", "--password-stdin", "--data-dir", str(data),
                     stdin=PASSWORD + "\n")
    assert result.returncode == 0, result.stderr
    assert (data / DATABASE_FILE).exists()
