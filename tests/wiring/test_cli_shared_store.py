"""The account commands on a shared PostgreSQL store (issue 26): `user add`, `token revoke`
and `user delete` write beside running processes — the data dir's lock guards only its
SQLite — and the database keeps writers apart: a user added by the command line logs in on
every process at once, two commands adding one name give one user and one clear line (exit
2), and a revoked token is refused everywhere.

Only under `--engine=postgresql` (`make test-postgres`).
"""

from __future__ import annotations

import asyncio
import io
import subprocess
import sys
from pathlib import Path

import pytest

from app.wiring.cli import main
from app.wiring.server import create_app
from tests.procs import ROOT, clean_env
from tests.store import store_transaction

pytestmark = pytest.mark.postgres_only

PASSWORD = "correct horse battery"


@pytest.fixture
def novaberg(capsys, monkeypatch):
    """The command line in this process, on a thread of its own beside the test's apps:
    `await novaberg(*args, stdin=…)` → (exit code, out, err)."""
    def run(args: tuple[str, ...], stdin: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    async def command(*args: str, stdin: str = "") -> tuple[int, str, str]:
        return await asyncio.to_thread(run, args, stdin)

    return command


async def test_a_user_added_beside_running_processes_logs_in_on_each(
        aiohttp_client, make_settings, session_redis, tmp_path: Path, novaberg,
        monkeypatch) -> None:
    first = make_settings(headless=True, redis_url=session_redis.url("shared"))
    monkeypatch.setenv("NOVABERG_REDIS_URL", str(first.redis_url))  # the command's Redis too
    second = first.replace(data_dir=str(tmp_path / "second"))
    clients = [await aiohttp_client(create_app(settings)) for settings in (first, second)]
    data = ("--data-dir", str(first.data_path))  # the data dir a running process holds
    code, out, err = await novaberg(*data, "user", "add", "anna", "--password-stdin",
                              stdin=PASSWORD + "\n")
    assert (code, err) == (0, ""), err
    token = out.split()[-1]
    for client in clients:
        login = await client.post("/api/login", json={"name": "anna", "password": PASSWORD})
        assert login.status == 200, await login.text()
        me = await client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
        assert (await me.json())["user_id"] == "anna"
    assert await novaberg(*data, "user", "add", "anna", "--password-stdin",
                    stdin=PASSWORD + "\n") == (2, "", "novaberg: user 'anna' already exists\n")
    [[token_id, _, _, _]] = [line.split() for line in
                             (await novaberg(*data, "token", "list"))[1].splitlines()]
    assert (await novaberg(*data, "token", "revoke", token_id))[0] == 0
    for client in clients:
        me = await client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status == 401
    assert (await novaberg(*data, "user", "delete", "anna"))[0] == 0  # beside the processes
    for client in clients:
        login = await client.post("/api/login", json={"name": "anna", "password": PASSWORD})
        assert login.status == 401


def test_two_commands_adding_one_name_at_once_make_one_user(tmp_path: Path,
                                                             make_settings) -> None:
    env = clean_env()  # the test's database
    adding = [subprocess.Popen(
        [sys.executable, "-m", "app", "--data-dir", str(tmp_path / f"d{n}"), "user", "add",
         "bob", "--password-stdin"], cwd=ROOT, env=env, stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(2)]
    results = [process.communicate(PASSWORD + "\n", timeout=60) for process in adding]
    codes = sorted(process.returncode for process in adding)
    assert codes == [0, 2], results
    [(_, refused)] = [err for process, err in zip(adding, results, strict=True)
                      if process.returncode == 2]
    assert refused == "novaberg: user 'bob' already exists\n"
    with store_transaction(make_settings()) as conn:
        assert [row[0] for row in conn.execute("SELECT user_id FROM users")] == ["bob"]
        assert conn.execute("SELECT count(*) FROM api_tokens").fetchone()[0] == 1
