"""A store moves between the engines by backup and restore, and processes share PostgreSQL.

- desktop → server: the SQLite file a backup holds (`copy_database`) is restored into
  PostgreSQL (`load_store`), and everything reads there as it did — the user logs in with
  the same password and token, the log pages and searches ("Leipzig" finds "Leipziger"),
  memories and the privacy registry are there, and new rows get fresh ids;
- server → desktop: PostgreSQL's store is written as that same backup file (`dump_store`),
  the SQLite engine opens it, and its FTS5 indexes find what PostgreSQL's found;
- two apps on one PostgreSQL (each with its own data dir and Redis): a user added through one
  logs in on the other, by password and by token.

Only under `--engine=postgresql` (`make test-postgres`): they need both engines.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from app.auth.accounts import add_user_sync, verify_password
from app.backup.database import copy_database, dump_store, load_store
from app.memory import history
from app.llm.privacy.registry import IdentityRegistry, Person
from app.memory.long_term import Change, LongTermMemory
from app.memory.message_log import LoggedMessage, MessageLog
from app.storage.database import Database, PostgresDatabase
from app.wiring.server import create_app
from tests.accounts import PASSWORD, add_user

pytestmark = pytest.mark.postgres_only

LINES = [("user", "Ich fahre morgen nach Leipzig."), ("assistant", "Was machst du dort?"),
         ("user", "Wir essen Leipziger Allerlei, Tante Jo kocht."), ("assistant", "Lecker!")]


def entry(n: int, role: str, text: str) -> LoggedMessage:
    return LoggedMessage(entry_key=f"e{n}", user_id="anna", character_id="nova",
                         turn_id=f"t{n // 2}", message_ids=[f"m{n}"], role=role, occasion="",
                         text=text, created=1_700_000_000.0 + n, calendar_date="2026-03-01")


async def fill(db: Database) -> str:
    """A user with a day of talk, a memory and a registered person; returns the token."""
    token = await db.execute_write_fn(lambda conn: add_user_sync(conn, "anna", PASSWORD))
    await MessageLog(db).append_all([entry(n, role, text) for n, (role, text) in
                                     enumerate(LINES)])
    await LongTermMemory(db).apply("trigger-1", "anna", "nova",
                                   [Change("remember", "Anna fährt gern nach Leipzig.", "fact",
                                           0.7)], ["m0"], time.time())
    await IdentityRegistry(db).replace("anna", [Person("Annegret Wolkenstein", ["Anne"])])
    return token


async def seen(db: Database, token_hash: str) -> dict[str, object]:
    """What the store shows of anna, engine-independently."""
    def read(conn: object) -> dict[str, object]:
        found, _ = history.search(conn, "anna", "nova", "Leipzig", limit=10)
        short, _ = history.search(conn, "anna", "nova", "Jo", limit=10)
        page = history.page(conn, "anna", "nova", limit=10)
        stored = conn.execute("SELECT password_hash FROM users WHERE user_id = 'anna'"
                              ).fetchone()
        tokens = conn.execute("SELECT user_id FROM api_tokens WHERE token_hash = ?",
                              (token_hash,)).fetchall()
        return {"search": [line.text for line in found], "short": [line.text for line in short],
                "page": [(line.role, line.text) for line in page.lines],
                "password": stored is not None and verify_password(PASSWORD, stored[0]),
                "token": [row[0] for row in tokens]}

    view = await db.execute_fn(read)
    view["memories"] = [m.text for m in await LongTermMemory(db).list("anna", "nova",
                                                                     query="Leipziger")]
    view["people"] = [p.names() for p in await IdentityRegistry(db).people("anna")]
    return view


EXPECTED = {
    "search": [LINES[2][1], LINES[0][1]],
    "short": [LINES[2][1]],
    "page": LINES,
    "password": True,
    "token": ["anna"],
    "memories": ["Anna fährt gern nach Leipzig."],
    "people": [["Annegret Wolkenstein", "Anne"]],
}


async def test_a_store_moves_from_sqlite_to_postgresql_and_back(tmp_path: Path,
                                                                postgres_url: str) -> None:
    from app.auth.accounts import token_hash

    desktop = Database(tmp_path / "desktop.sqlite3")
    await desktop.open()
    try:
        token = await fill(desktop)
        assert await seen(desktop, token_hash(token)) == EXPECTED
    finally:
        await desktop.close()
    backup = tmp_path / "backup.sqlite3"
    copy_database(tmp_path / "desktop.sqlite3", backup, include_accounts=True)
    restoring = tmp_path / "restoring.sqlite3"
    shutil.copyfile(backup, restoring)
    load_store(restoring, postgres_url)

    server = PostgresDatabase(postgres_url)
    await server.open()
    try:
        assert await seen(server, token_hash(token)) == EXPECTED
        # New rows after the restored ones: the ids go on, nothing collides.
        assert await MessageLog(server).append(entry(4, "user", "Zurück aus Leipzig."))
        assert await LongTermMemory(server).apply(
            "trigger-2", "anna", "nova", [Change("remember", "Jo kocht gut.", "fact", 0.5)],
            ["m4"], time.time()) is not None
    finally:
        await server.close()

    dumped = tmp_path / "dumped.sqlite3"
    dump_store(postgres_url, dumped, include_accounts=False)
    back = Database(dumped)
    await back.open()
    try:
        view = await seen(back, token_hash(token))
        assert view["search"] == ["Zurück aus Leipzig.", *EXPECTED["search"]]
        assert view["memories"] == EXPECTED["memories"]
        assert view["people"] == EXPECTED["people"]
        assert [m.text for m in await LongTermMemory(back).list("anna", "nova", query="kocht")] \
            == ["Jo kocht gut."]
        # A backup without accounts holds no credential.
        assert (view["password"], view["token"]) == (False, [])
    finally:
        await back.close()


async def test_a_restore_without_accounts_keeps_the_servers_users(tmp_path: Path,
                                                                  postgres_url: str) -> None:
    server = PostgresDatabase(postgres_url)
    await server.open()
    try:
        await server.execute_write_fn(lambda conn: add_user_sync(conn, "bob", "bobs password"))
    finally:
        await server.close()
    desktop = Database(tmp_path / "desktop.sqlite3")
    await desktop.open()
    try:
        await fill(desktop)
    finally:
        await desktop.close()
    backup = tmp_path / "backup.sqlite3"
    copy_database(tmp_path / "desktop.sqlite3", backup, include_accounts=False)
    load_store(backup, postgres_url)
    server = PostgresDatabase(postgres_url)
    await server.open()
    try:
        users = await server.execute_fn(
            lambda conn: [row[0] for row in conn.execute("SELECT user_id FROM users")])
        assert users == ["bob"]
        assert len(await MessageLog(server).for_user("anna")) == len(LINES)
    finally:
        await server.close()


async def test_a_user_added_through_one_process_logs_in_on_another(
        aiohttp_client, make_settings, session_redis, tmp_path: Path,
        postgres_url: str) -> None:
    """Two apps, as two processes behind one proxy: one PostgreSQL, one Redis, data dirs of
    their own. Before `database_url`, B refused A's user (401)."""
    first = make_settings(headless=True, database_url=postgres_url,
                          redis_url=session_redis.url("shared"))
    second = first.replace(data_dir=str(tmp_path / "second"))
    clients = [await aiohttp_client(create_app(settings)) for settings in (first, second)]
    token = add_user(first)
    for client in clients:
        login = await client.post("/api/login", json={"name": "anna", "password": PASSWORD})
        assert login.status == 200, await login.text()
        me = await client.get("/api/me", headers={"Authorization": f"Bearer {token}"})
        assert (await me.json())["user_id"] == "anna"
    bad = await clients[1].post("/api/login", json={"name": "anna", "password": "not hers!!"})
    assert bad.status == 401


def test_a_database_url_that_is_not_postgresql_stops_the_start(tmp_path: Path, capsys) -> None:
    from app.wiring.cli import main

    code = main(["--headless", "--data-dir", str(tmp_path / "d"), "--database-url",
                 "mysql://me:secret@db/novaberg"])
    err = capsys.readouterr().err
    assert code == 2 and "expected postgresql://" in err and "secret" not in err
