"""Backup and restore for real: the running app over real Redis and SQLite, the CLI in-process
(and the real entry point as a subprocess where the data-dir lock matters).

The round trip is judged by the API: what the user saw before the backup is what the next
start shows after the restore.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import logging
import shlex
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
import redis as redis_sync

from app.api.app_keys import BACKUPS, REDIS, RUNTIME, SETTINGS
from app.backup import redis_snapshot
from app.backup.archive import MANIFEST, REDIS_FILE, list_backups, verify
from app.backup.restore import SAFETY_PREFIX
from app.memory import keys
from app.memory.lists import ListStore
from app.storage.embedded_redis import EmbeddedRedis
from app.wiring.cli import main
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.fakemodel import Reply
from tests.pipeline_support import fake_app, open_chat
from tests.procs import AppProcess, free_port
from tests.store import live_connection
from tests.waiting import logged, until

# Backups BGSAVE into the data dir's redis/ and restores load files there: the embedded
# Redis of the data dir itself, not a database of the session's (tests/conftest.py).
pytestmark = pytest.mark.own_redis

PAIR_VIEWS = ("session", "lists", "reminders", "state")


async def api_view(client: Any, turn_ids: list[str], message_ids: list[str]) -> dict[str, Any]:
    """Everything the API shows of the pair, its turns and its messages."""
    view: dict[str, Any] = {}
    for name in PAIR_VIEWS:
        response = await client.get(f"/api/characters/nova/{name}", headers=AUTH)
        assert response.status == 200, await response.text()
        view[name] = await response.json()
    for turn_id in turn_ids:
        view[f"turn {turn_id}"] = await (await client.get(f"/api/turns/{turn_id}",
                                                          headers=AUTH)).json()
    for message_id in message_ids:
        view[f"message {message_id}"] = await (await client.get(f"/api/messages/{message_id}",
                                                                headers=AUTH)).json()
    return view


def tree_digest(path: Path) -> dict[str, str]:
    """Every file under `path` with its sha256: "nothing changed" made checkable. Left out:
    the lock, and SQLite's shared-memory index and an empty WAL, which any reader of a WAL
    database creates (bookkeeping, not data)."""
    def counts(p: Path) -> bool:
        if p.name == "novaberg.lock" or p.name.endswith("-shm"):
            return False
        return not (p.name.endswith("-wal") and p.stat().st_size == 0)

    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file() and counts(p)}


# A due time within reminder_max_days_ahead (the year 2100 is refused now).
IN_A_MONTH = time.time() + 30 * 86400


def run_cli(data_dir: Path, *args: str) -> int:
    return main(["--data-dir", str(data_dir), *args])


async def chat_some(app: Any, aiohttp_client: Any, texts: list[str]) -> tuple[Any, list[str], list[str]]:
    chat = await open_chat(aiohttp_client, app)
    message_ids, turn_ids = [], []
    for text in texts:
        sent = await chat.send(text)
        answer = await chat.response(sent)
        message_ids.append(sent)
        turn_ids.append(answer["turn_id"])
    await chat.settle()
    return chat, message_ids, turn_ids


async def test_round_trip_gives_identical_api_answers(fake_model, make_settings, aiohttp_client,
                                                     data_dir, capsys):
    fake_model.always("responder", "Schön, das zu hören.")
    app = fake_app(fake_model, make_settings, input_window_seconds=0.0)
    chat, message_ids, turn_ids = await chat_some(app, aiohttp_client,
                                                  ["Guten Morgen!", "Ich war heute joggen."])
    await ListStore(app[REDIS], "local", "nova").apply("Einkauf", add=["Milch", "Brot"])
    created = await chat.client.post("/api/characters/nova/reminders", headers=AUTH,
                                     json={"text": "Zahnarzt", "due_at": IN_A_MONTH})
    assert created.status == 201
    before = await api_view(chat.client, turn_ids, message_ids)
    ttl_before = await app[REDIS].ttl(keys.session_turns("local", "nova"))

    response = await chat.client.post("/api/backups", headers=AUTH)
    assert response.status == 201, await response.text()
    made = await response.json()
    assert made["counts"]["messages"] == 4 and made["counts"]["users"] == 1
    assert made["accounts_included"] is False
    assert not (data_dir / "redis" / "dump.rdb").exists()  # the background save was taken away
    listed = await (await chat.client.get("/api/backups", headers=AUTH)).json()
    assert [b["name"] for b in listed["backups"]] == [made["name"]]
    assert listed["data_dir"] == str(data_dir)
    # The settings dialog shows this line; it is the command that restores (run below).
    command = shlex.split(listed["backups"][0]["restore_command"])
    assert command == ["novaberg", "--data-dir", str(data_dir), "restore", made["path"]]

    # What happens after the backup is what the restore takes back.
    await chat.send("Das hier kommt nach der Sicherung.")
    await chat.wait_for(lambda m: m["type"] == "character_response", count=3)
    await chat.settle()
    await chat.close()
    await chat.client.close()

    assert main([*command[1:], "--yes"]) == 0
    out = capsys.readouterr().out
    assert "messages" in out and "Restored" in out
    safety = [p for p in data_dir.iterdir() if p.name.startswith(SAFETY_PREFIX)]
    assert len(safety) == 1
    kept = verify(safety[0])  # the safety backup is a complete, valid backup itself
    assert kept.manifest["counts"]["messages"] == 6 and kept.manifest["accounts_included"]

    restarted = create_app(app[SETTINGS], local_token=TOKEN)
    client = await aiohttp_client(restarted)
    await restarted[RUNTIME].idle()
    after = await api_view(client, turn_ids, message_ids)
    assert after == before
    ttl_after = await restarted[REDIS].ttl(keys.session_turns("local", "nova"))
    assert 0 < ttl_after <= ttl_before  # the TTL came back (what was left of it)


async def test_backup_while_twenty_messages_are_answered_is_consistent(
        fake_model, make_settings, aiohttp_client, data_dir, tmp_path):
    fake_model.always("responder", Reply("Okay.", delay=0.08))
    app = fake_app(fake_model, make_settings, input_window_seconds=0.0)
    chat = await open_chat(aiohttp_client, app)
    sent = [await chat.send(f"Nachricht {n}") for n in range(20)]
    await chat.wait_for(lambda m: m["type"] == "character_response", count=2)
    response = await chat.client.post("/api/backups", headers=AUTH)
    assert response.status == 201
    made = await response.json()
    await chat.wait_for(lambda m: m["type"] == "character_response", count=20, timeout=60)
    await chat.settle()
    await chat.close()

    folder = Path(made["path"])
    conn = sqlite3.connect(folder / "novaberg.sqlite3")
    rows = conn.execute("SELECT turn_id, message_ids, role FROM messages").fetchall()
    conn.close()
    assert 0 < len(rows) < 40, "the backup should catch the answering half-way"
    records = {r["key"]: r for r in redis_snapshot.read_records(folder / REDIS_FILE)}
    for turn_id, message_ids, role in rows:  # every logged message has its turn, no torn row
        assert keys.turn_record(turn_id) in records, turn_id
        assert keys.turn_history(turn_id) in records, turn_id
        for message_id in json.loads(message_ids):
            assert keys.message_record(message_id) in records
    for message_id in sent:  # every accepted message is somewhere: record kept
        assert keys.message_record(message_id) in records

    # It restores, and the restored app finishes what was in flight: every message of the
    # backup ends answered or failed, none is lost.
    await chat.client.close()
    assert run_cli(data_dir, "restore", str(folder), "--yes") == 0
    restarted = create_app(make_settings(**fake_model.overrides(input_window_seconds=0.0)),
                           local_token=TOKEN)
    client = await aiohttp_client(restarted)

    async def states() -> list[str]:
        return [(await (await client.get(f"/api/messages/{m}", headers=AUTH)).json())["state"]
                for m in sent]

    await until(states, lambda seen: all(s in ("delivered", "failed") for s in seen),
                timeout=30, every=0.05, what="every message to end answered or failed")


@pytest.fixture
def backup_folder(settings, data_dir, tmp_path) -> Path:
    """A real backup of a data dir with one message exchange (taken by the CLI, no app)."""
    from app.storage.migrations import apply_migrations

    conn = live_connection(data_dir)
    apply_migrations(conn)
    with conn:
        conn.execute("INSERT INTO messages (entry_key, user_id, character_id, turn_id, role, "
                     "text, created, calendar_date) VALUES ('k1', 'local', 'nova', 't1', "
                     "'user', 'Hallo', 1.0, '2026-01-01')")
    conn.close()
    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "out")) == 0
    return next((tmp_path / "out").iterdir())


def _change_byte(folder: Path) -> str:
    path = folder / "novaberg.sqlite3"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))
    return "novaberg.sqlite3: checksum differs"


def _missing(folder: Path) -> str:
    (folder / "novaberg.sqlite3").unlink()
    return "novaberg.sqlite3 is missing"


def _extra(folder: Path) -> str:
    (folder / "notes.txt").write_text("hi")
    return "notes.txt is not in the manifest"


def _format(folder: Path) -> str:
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["format_version"] = 2
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return "format_version 2 is not supported"


def _truncated(folder: Path) -> str:
    path = folder / "novaberg.sqlite3"
    path.write_bytes(path.read_bytes()[:-10])
    return "novaberg.sqlite3 has"


def _no_manifest(folder: Path) -> str:
    (folder / MANIFEST).unlink()
    return "manifest.json is missing"


@pytest.mark.parametrize("damage", [_change_byte, _missing, _extra, _format, _truncated,
                                    _no_manifest])
def test_a_damaged_backup_is_refused_and_nothing_changes(backup_folder, data_dir, damage, capsys):
    expected = damage(backup_folder)
    before = tree_digest(data_dir)

    assert run_cli(data_dir, "restore", str(backup_folder), "--yes") == 2

    err = capsys.readouterr().err
    assert expected in err and "nothing was changed" in err
    assert tree_digest(data_dir) == before
    assert not [p for p in data_dir.iterdir() if p.name.startswith(SAFETY_PREFIX)]


def test_a_declined_restore_changes_nothing(backup_folder, data_dir, monkeypatch, capsys):
    before = tree_digest(data_dir)
    monkeypatch.setattr("builtins.input", lambda: "n")
    assert run_cli(data_dir, "restore", str(backup_folder)) == 1
    out = capsys.readouterr().out
    assert "messages" in out and "[y/N]" in out
    assert tree_digest(data_dir) == before


def test_restore_is_refused_while_the_app_runs(tmp_path, backup_folder, capsys):
    data = tmp_path / "running"
    proc = AppProcess(data, port=free_port()).start()
    try:
        assert proc.post("/api/characters/nova/reminders",
                         {"text": "Blumen gießen", "due_at": IN_A_MONTH})[0] == 201
        # A backup from the command line works while the app runs (its Redis, its database).
        assert run_cli(data, "backup") == 0
        made = list_backups(data / "backups")
        assert len(made) == 1 and made[0].manifest["counts"]["redis_keys"] > 0
        capsys.readouterr()
        before = tree_digest(data / "backups")

        assert run_cli(data, "restore", str(backup_folder), "--yes") == 2
        assert "is in use by pid" in capsys.readouterr().err
        assert tree_digest(data / "backups") == before
        assert not list(data.glob(SAFETY_PREFIX + "*"))
        assert proc.get("/api/characters/nova/reminders")[1][0]["text"] == "Blumen gießen"
    finally:
        assert proc.stop() == 0


def test_secrets_stay_out_unless_asked_for(data_dir, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse battery\n"))
    assert run_cli(data_dir, "user", "add", "anna", "--password-stdin") == 0
    token = capsys.readouterr().out.strip().rsplit(" ", 1)[-1]
    conn = live_connection(data_dir)
    password_hash = conn.execute("SELECT password_hash FROM users").fetchone()[0]
    token_hash = conn.execute("SELECT token_hash FROM api_tokens").fetchone()[0]
    conn.close()
    secrets = [token, password_hash, token_hash, password_hash.split("$")[-1]]

    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "plain")) == 0
    assert run_cli(data_dir, "backup", "--to", str(tmp_path / "full"), "--include-accounts") == 0
    plain = next((tmp_path / "plain").iterdir())
    full = next((tmp_path / "full").iterdir())

    def grep(folder: Path, needle: str) -> bool:
        return any(needle.encode() in p.read_bytes() for p in folder.iterdir())

    assert not any(grep(plain, s) for s in secrets)
    assert grep(full, password_hash) and grep(full, token_hash)
    assert json.loads((full / MANIFEST).read_text())["accounts_included"] is True

    # A restore of the plain backup keeps this install's accounts.
    assert run_cli(data_dir, "restore", str(plain), "--yes") == 0
    conn = live_connection(data_dir)
    assert [tuple(row) for row in conn.execute("SELECT user_id FROM users")] == [("anna",)]
    conn.close()


@pytest.mark.parametrize("writer", ["write_snapshot", "write_private_snapshot"])
async def test_login_sessions_and_process_keys_stay_out(redis_client, tmp_path, writer):
    """Both ways of reading: batch by batch (a live server) and chunk by chunk with the
    transient keys left out by the server (a private one; its non-UTF-8 value sends it back
    to the batches)."""
    await redis_client.set(keys.auth_session("s1"), "anna", ex=600)
    await redis_client.set(keys.login_failures("name", "anna"), "3", ex=600)
    await redis_client.set(keys.login_blocked("client", "127.0.0.1"), "5", ex=60)
    await redis_client.set(keys.heartbeat("i1"), "1", ex=30)
    await redis_client.set(keys.turn_marker("local", "nova"), "x", ex=30)
    await redis_client.zadd(keys.run_slots("http://127.0.0.1:8080"), {"h": 1.0})
    await redis_client.rpush(keys.run_slot_queue("http://127.0.0.1:8080"), "i1")
    await redis_client.sadd(keys.instances(), "i1")
    await redis_client.rpush(keys.session_turns("local", "nova"), "a", "b")
    await redis_client.expire(keys.session_turns("local", "nova"), 1000)
    await redis_client.hset(keys.nova_state("local", "nova"), mapping={"mood": "ok"})
    await redis_client.sadd(keys.open_turns(), "t1")
    await redis_client.zadd(keys.reminders_due(), {"local:nova:r1": 12.5})
    await redis_client.set("future:key:nobody:knows:yet", "kept too")
    url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    client = redis_snapshot.connect(url)
    client.rpush("bytes:not:utf8", b"\xff\xfe ok", "Grüße")  # read back raw, kept exactly
    out = tmp_path / "snap.jsonl"
    with out.open("w") as handle:
        written = getattr(redis_snapshot, writer)(client, handle)
    records = {r["key"]: r for r in redis_snapshot.read_records(out)}
    assert written == 6 and set(records) == {
        keys.session_turns("local", "nova"), keys.nova_state("local", "nova"), keys.open_turns(),
        keys.reminders_due(), "future:key:nobody:knows:yet", "bytes:not:utf8"}
    assert 990 < records[keys.session_turns("local", "nova")]["ttl_ms"] / 1000 <= 1000
    assert records[keys.reminders_due()]["value"] == [["local:nova:r1", 12.5]]

    # Loading it into an empty server gives the same keys, values and TTLs.
    await redis_client.flushdb()
    loaded = redis_snapshot.load_snapshot(client, redis_snapshot.read_records(out))
    assert client.lrange("bytes:not:utf8", 0, -1) == [b"\xff\xfe ok", "Grüße".encode()]
    client.close()
    assert loaded == 6
    assert await redis_client.lrange(keys.session_turns("local", "nova"), 0, -1) == ["a", "b"]
    assert 990 < await redis_client.ttl(keys.session_turns("local", "nova")) <= 1000
    assert await redis_client.ttl(keys.nova_state("local", "nova")) == -1
    assert await redis_client.zscore(keys.reminders_due(), "local:nova:r1") == 12.5
    assert await redis_client.get(keys.auth_session("s1")) is None


async def test_a_backup_that_holds_login_throttling_restores_without_it(redis_client, tmp_path):
    """A backup made before login throttling was left out holds its keys: a restore does not
    bring back someone's failed logins or a block on their next try."""
    out = tmp_path / "old.jsonl"
    records = [(keys.login_failures("name", "anna"), "3"),
               (keys.login_blocked("client", "127.0.0.1"), "5"),
               (keys.nova_state("local", "nova"), "kept")]
    out.write_text("".join(json.dumps({"key": key, "type": "string", "ttl_ms": 600_000,
                                       "value": value}) + "\n" for key, value in records))
    url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    client = redis_snapshot.connect(url)
    try:
        assert redis_snapshot.load_snapshot(client, redis_snapshot.read_records(out)) == 1
    finally:
        client.close()
    assert await redis_client.keys("login_*") == []
    assert await redis_client.get(keys.nova_state("local", "nova")) == "kept"


async def test_a_private_server_read_in_chunks_gives_what_batches_give(redis_client, tmp_path,
                                                                      monkeypatch):
    """Many SCAN steps (a chunk of 7 keys), every rule of `keys.transient` applied by the
    server (prefix, whole name, suffix), every type: the same records as the batch reader."""
    monkeypatch.setattr(redis_snapshot, "CHUNK", 7)
    for n in range(40):
        await redis_client.rpush(f"session:u{n}:nova:turns", "a", f"Grüße {n}")
        await redis_client.set(keys.heartbeat(f"i{n}"), "1", ex=30)
        await redis_client.set(f"summary:u{n}:nova:summary_lock", "x", ex=30)
    await redis_client.sadd("heartbeats", "i1")
    await redis_client.sadd("a:set", "b", "a")
    await redis_client.hset("a:hash", mapping={"k": "v"})
    await redis_client.zadd("a:zset", {"m": 0.1 + 0.2})
    await redis_client.set("a:string", "s", ex=500)
    url = f"unix://{redis_client.connection_pool.connection_kwargs['path']}"
    client = redis_snapshot.connect(url)
    found = {}
    for writer in (redis_snapshot.write_snapshot, redis_snapshot.write_private_snapshot):
        out = tmp_path / f"{writer.__name__}.jsonl"
        with out.open("w") as handle:
            assert writer(client, handle) == 44
        found[writer] = {r["key"]: {**r, "ttl_ms": r["ttl_ms"] and r["ttl_ms"] // 10_000}
                         for r in redis_snapshot.read_records(out)}
    client.close()
    batches, chunks = found.values()
    assert chunks == batches and len(chunks) == 44
    assert chunks["a:zset"]["value"] == [["m", 0.1 + 0.2]]
    assert not any(keys.transient(key) for key in chunks)


def test_a_restore_that_fails_half_way_says_how_to_get_back(make_settings, data_dir, tmp_path,
                                                             capsys):
    """An external Redis that refuses writes (an ACL without @write, as an admin might set it)
    stops the restore after the current data was moved aside; the printed command brings it
    back."""
    directory = Path(tempfile.mkdtemp(prefix="nb-ext-"))
    server = EmbeddedRedis(directory, appendfsync="no")
    server.start()
    try:
        url = server.url
        client = redis_sync.Redis.from_url(url)
        client.rpush(keys.session_turns("local", "nova"), "vorher")
        from app.storage.migrations import apply_migrations

        conn = live_connection(data_dir)
        apply_migrations(conn)
        conn.close()
        assert main(["--data-dir", str(data_dir), "--redis-url", url, "backup",
                     "--to", str(tmp_path / "b")]) == 0
        folder = next((tmp_path / "b").iterdir())
        client.rpush(keys.session_turns("local", "nova"), "nachher")
        capsys.readouterr()

        # A Redis that cannot even be read for the safety backup: refused, nothing changed.
        before = tree_digest(data_dir)
        client.execute_command("ACL", "SETUSER", "default", "-@scripting")
        code = main(["--data-dir", str(data_dir), "--redis-url", url, "restore", str(folder),
                     "--yes"])
        assert code == 2 and "nothing was changed" in capsys.readouterr().err
        assert tree_digest(data_dir) == before
        assert not list(data_dir.glob(SAFETY_PREFIX + "*"))
        client.execute_command("ACL", "SETUSER", "default", "+@all")

        client.execute_command("ACL", "SETUSER", "default", "-@write")
        code = main(["--data-dir", str(data_dir), "--redis-url", url, "restore", str(folder),
                     "--yes"])
        err = capsys.readouterr().err
        assert code == 1 and "restore failed half-way" in err
        safety = next(data_dir.glob(SAFETY_PREFIX + "*"))
        assert f"restore {safety} --yes" in err
        verify(safety)

        client.execute_command("ACL", "SETUSER", "default", "+@all")
        assert main(["--data-dir", str(data_dir), "--redis-url", url, "restore", str(safety),
                     "--yes"]) == 0
        assert client.lrange(keys.session_turns("local", "nova"), 0, -1) == [b"vorher",
                                                                             b"nachher"]
        client.close()
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


async def test_only_the_admin_takes_or_lists_backups(make_settings, aiohttp_client, data_dir):
    from app.auth.accounts import add_user_sync
    from app.storage.migrations import apply_migrations

    conn = live_connection(data_dir)
    apply_migrations(conn)
    anna = add_user_sync(conn, "anna", "correct horse battery")
    conn.close()
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline",
                                                           headless=True), local_token=TOKEN))
    as_anna = {"Authorization": f"Bearer {anna}"}
    assert (await client.post("/api/backups", headers=as_anna)).status == 403
    assert (await client.get("/api/backups", headers=as_anna)).status == 403
    assert not (data_dir / "backups").exists()
    assert (await client.post("/api/backups", headers=AUTH)).status == 201


async def test_backup_keep_removes_the_oldest(make_settings, aiohttp_client, data_dir):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline",
                                                           backup_keep=2), local_token=TOKEN))
    names = []
    for _ in range(3):
        response = await client.post("/api/backups", headers=AUTH)
        assert response.status == 201
        names.append((await response.json())["name"])
    listed = await (await client.get("/api/backups", headers=AUTH)).json()
    assert [b["name"] for b in listed["backups"]] == names[:0:-1]
    assert sorted(p.name for p in (data_dir / "backups").iterdir()) == sorted(names[1:])


async def daily_results(app: Any, caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the daily backup's rounds found or made, once its first round has finished (the
    ticker's debug record of each round)."""
    async with asyncio.timeout(30):
        await app[BACKUPS].daily.wait_rounds(1)
    return [r.fields["result"] for r in logged(caplog, "background round")
            if r.fields.get("task") == "daily-backup"]


async def test_daily_backup_once_per_day(make_settings, aiohttp_client, data_dir, caplog):
    caplog.set_level(logging.DEBUG, logger="app.backup.service")
    settings = make_settings(llm_provider="offline", backup_daily_delay=0.0)
    client = await aiohttp_client(create_app(settings, local_token=TOKEN))
    [made] = await daily_results(client.app, caplog)
    assert [b.path.name for b in list_backups(data_dir / "backups")] == [made]
    await client.close()
    caplog.clear()
    again = await aiohttp_client(create_app(settings, local_token=TOKEN))
    assert await daily_results(again.app, caplog) == ["today's exists"]
    assert len(list_backups(data_dir / "backups")) == 1  # no second one
    await again.close()


async def test_a_second_backup_while_one_runs_is_refused(make_settings, aiohttp_client):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    first, second = await asyncio.gather(client.post("/api/backups", headers=AUTH),
                                         client.post("/api/backups", headers=AUTH))
    assert sorted([first.status, second.status]) == [201, 409]
    refused = first if first.status == 409 else second
    assert (await refused.json())["error"]["code"] == "backup_running"
    listed = await (await client.get("/api/backups", headers=AUTH)).json()
    assert len(listed["backups"]) == 1


def test_the_data_dir_may_also_follow_the_backup_subcommand(tmp_path: Path) -> None:
    from app.storage.migrations import apply_migrations

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    conn = live_connection(data_dir)
    apply_migrations(conn)
    conn.close()
    assert main(["backup", "--to", str(tmp_path / "out"), "--data-dir", str(data_dir)]) == 0
    [folder] = (tmp_path / "out").iterdir()
    assert (folder / "manifest.json").exists()
    assert not (Path.cwd() / "out").exists()


async def test_memories_come_back_with_their_index_and_forgotten_ones_stay_gone(
        make_settings, aiohttp_client, data_dir, capsys):
    """Long-term memory is in the backup (design §3a, issue 14 item 7): the rows and their FTS
    entries — search finds them after the restore — and a memory forgotten before the
    backup is in neither the backup nor the restored database."""
    from app.api.app_keys import DB
    from app.memory.long_term import Change, LongTermMemory

    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    store = LongTermMemory(app[DB])
    ids = {}
    for n, text in enumerate(("Meine Schwester Jana wohnt in Leipzig.",
                              "Mein Passwort ist Zebrastreifen77.", "Ich mag Erdbeereis.")):
        applied = await store.apply(f"t{n}", "local", "nova", [Change("remember", text)],
                                    [f"m{n}"], 1000.0 + n)
        ids[text.split()[1]] = applied.added[0]
    base = "/api/characters/nova/memories"
    assert (await client.delete(f"{base}/{ids['Passwort']}", headers=AUTH)).status == 204
    before = await (await client.get(base, headers=AUTH)).json()
    assert len(before) == 2

    response = await client.post("/api/backups", headers=AUTH)
    assert response.status == 201, await response.text()
    made = await response.json()
    assert b"Zebrastreifen" not in (Path(made["path"]) / "novaberg.sqlite3").read_bytes()
    # After the backup: one forgotten, one learnt — the restore takes both back.
    assert (await client.delete(f"{base}/{ids['Schwester']}", headers=AUTH)).status == 204
    await store.apply("t9", "local", "nova", [Change("remember", "Ich spiele Cello.")],
                      ["m9"], 2000.0)
    await client.close()

    assert run_cli(data_dir, "restore", made["path"], "--yes") == 0
    capsys.readouterr()
    restarted = create_app(app[SETTINGS], local_token=TOKEN)
    client = await aiohttp_client(restarted)
    assert await (await client.get(base, headers=AUTH)).json() == before
    found = await (await client.get(base, params={"q": "Leipziger"}, headers=AUTH)).json()
    assert [m["memory_id"] for m in found] == [ids["Schwester"]]
    assert await (await client.get(base, params={"q": "Cello"}, headers=AUTH)).json() == []
    assert await (await client.get(base, params={"q": "Zebrastreifen"}, headers=AUTH)).json() == []
    ranked = await LongTermMemory(restarted[DB]).relevant("local", "nova", "Wie geht es Jana?",
                                                          top_k=5, now=3000.0)
    assert [m.memory_id for m in ranked] == [ids["Schwester"]]
    await client.close()
    database = b"".join(p.read_bytes() for p in data_dir.glob("novaberg.sqlite3*"))
    assert b"Zebrastreifen" not in database
