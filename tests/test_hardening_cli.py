"""Issue 11, item 10: API tokens can be listed and revoked, users deleted with their data,
and the SQLite file is owner-only."""

from __future__ import annotations

import asyncio
import sqlite3
import stat
import time
from pathlib import Path

import redis as sync_redis

from app.redis_server import EmbeddedRedis
from app.server import DATABASE_FILE, REDIS_DIR, create_app
from tests.test_cli import run_cli

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
    assert (await client.post("/api/login", json={"name": "anna", "password": PASSWORD})).status == 200
    from app.typedefs import RUNTIME

    await client.app[RUNTIME].idle()
    busy = await asyncio.to_thread(run_cli, "--data-dir", str(data), "user", "delete", "anna")
    assert busy.returncode == 2 and "stop the app first" in busy.stderr
    await client.close()

    result = await asyncio.to_thread(run_cli, "--data-dir", str(data), "user", "delete", "anna")
    assert result.returncode == 0, result.stderr
    conn = sqlite3.connect(data / DATABASE_FILE)
    for table in ("users", "api_tokens", "messages"):
        users = {row[0] for row in conn.execute(f"SELECT user_id FROM {table}")}
        assert "anna" not in users and "bob" in users, table
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


async def test_the_database_file_is_owner_only(client, settings):
    mode = stat.S_IMODE((settings.data_path / DATABASE_FILE).stat().st_mode)
    assert mode == 0o600
