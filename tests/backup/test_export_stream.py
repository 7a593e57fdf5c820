"""Exports are streamed (issue 24, item 1): served in chunks as they are read, in memory
flat in the export's size, and still one JSON document of the same shape — which imports
again.

Another user is served while an export runs: the export is held on its reader thread
half-way, and that user's requests are answered meanwhile — the event loop carries none of
the export's work (behaviour, not time: no request waits for the export's end).

Memory is counted by `tracemalloc` (every Python allocation of every thread: the server's
reader thread, its event loop and the test's client) while a large export is downloaded to
a file; speed and the event loop's lag are the benchmark's (bench/exports.py)."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import string
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from app.api.app_keys import DB
from app.auth.accounts import add_user_sync
from app.backup import exports
from app.backup.chat_export import CHAT
from app.backup.exports import make_query, stream
from app.backup.journal_export import JOURNAL
from app.core import json_input
from app.core.settings import defaults
from app.memory.message_log import LoggedMessage, MessageLog
from app.storage.database import connect
from app.storage.migrations import apply_migrations
from app.wiring.server import create_app
from tests.conftest import AUTH, TOKEN
from tests.store import live_connection

MESSAGES = 30_000
WORDS = ("heute", "war", "ich", "im", "Park", "und", "Anna", "Kaffee", "schön", "müde", "„da“")


def fill_messages(data_dir: Path, count: int, rng: random.Random, user_id: str = "local",
                  prefix: str = "") -> None:
    """`count` rows of `user_id`'s log in the store of the app on `data_dir`, entry keys
    `{prefix}k0`, `{prefix}k1`, …"""
    conn = live_connection(data_dir)
    apply_migrations(conn)
    start = 1772323200.0
    with conn:
        conn.executemany(
            "INSERT INTO messages (entry_key, user_id, character_id, turn_id, message_ids, role, "
            "origin, text, created, calendar_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            ((f"{prefix}k{n}", user_id, "nova", f"{prefix}t{n // 2}",
              json.dumps([f"{prefix}m{n // 2}"]),
              "user" if n % 2 == 0 else "assistant", "" if n % 2 == 0 else "antwort",
              " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 80))),
              start + n * 60.0, f"2026-03-{1 + n * 60 // 86400:02d}") for n in range(count)))
    conn.close()


async def download(client: Any, path: str, into: Path) -> tuple[Any, int]:
    """GET `path` into the file `into`, chunk by chunk; (the response, the Python heap's
    peak in bytes above what it held before)."""
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        async with client.get(path, headers=AUTH) as response:
            with into.open("wb") as out:
                async for chunk in response.content.iter_chunked(1 << 16):
                    out.write(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return response, peak - base


# On PostgreSQL it passes but proves nothing: tracemalloc does not see libpq's buffer, which
# holds a query's whole result unless it is read through a server-side cursor (that reading
# in pages is the PostgreSQL side of this test, lane pgstream's).
@pytest.mark.sqlite_only("the heap counted by tracemalloc is not where a PostgreSQL result "
                         "is held (libpq's buffer)")
@pytest.mark.parametrize("fmt", ["json", "md"])
async def test_a_large_chat_export_streams_in_flat_memory(make_settings, data_dir, tmp_path,
                                                           aiohttp_client, fmt):
    fill_messages(data_dir, MESSAGES, random.Random(3))
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    into = tmp_path / f"chat.{fmt}"

    response, peak = await download(client, f"/api/exports/chat?format={fmt}", into)

    assert response.status == 200
    assert response.headers.get("Transfer-Encoding") == "chunked"
    assert "Content-Length" not in response.headers
    size = into.stat().st_size
    assert size > 8_000_000
    assert peak < 4_000_000, f"{peak / 1e6:.1f} MB of heap for a {size / 1e6:.1f} MB export"
    if fmt == "md":
        text = into.read_text(encoding="utf-8")
        assert text.startswith("# Conversation with all characters\n")
        assert f" · {MESSAGES} messages\n" in text and text.count("\n**You** · ") == MESSAGES // 2
        return
    document = json.loads(into.read_bytes())
    assert document["kind"] == "novaberg.chat" and len(document["messages"]) == MESSAGES
    assert [m["entry_key"] for m in document["messages"][:3]] == ["k0", "k1", "k2"]

    # The streamed document imports again (into another install), every message once.
    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other),
                                                      llm_provider="offline"),
                                             local_token=TOKEN))
    imported = await second.post("/api/imports", data=into.read_bytes(), headers=AUTH)
    answer = await imported.json()
    assert (answer["kind"], answer["imported"], answer["skipped"]) == ("novaberg.chat",
                                                                      MESSAGES, 0)
    assert answer["parts"]["messages"] == {"imported": MESSAGES, "skipped": 0}


class Gate:
    """Holds a streamed export before its second chunk, on the thread that makes it, until
    the test opens it; notes the thread each chunk of every export is made on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = threading.Event()
        self.made_on: list[int] = []
        self.held = threading.Event()
        chunked = exports.chunked

        def gated(pieces: Any, size: int = exports.CHUNK_BYTES) -> Any:
            for n, chunk in enumerate(chunked(pieces, size)):
                self.made_on.append(threading.get_ident())
                if n == 1:
                    self.held.set()
                    if not self.opened.wait(60):
                        raise AssertionError("the export's gate was never opened")
                yield chunk

        monkeypatch.setattr(exports, "chunked", gated)


async def test_another_user_is_answered_while_an_export_is_half_way(make_settings, data_dir,
                                                                    aiohttp_client,
                                                                    monkeypatch):
    fill_messages(data_dir, 6_000, random.Random(5), "anna", "a")
    fill_messages(data_dir, 10, random.Random(6), "bob", "b")
    conn = live_connection(data_dir)
    tokens = {name: add_user_sync(conn, name, "correct horse battery") for name in ("anna", "bob")}
    conn.close()
    anna, bob = ({"Authorization": f"Bearer {tokens[name]}"} for name in ("anna", "bob"))
    client = await aiohttp_client(create_app(make_settings(headless=True,
                                                           llm_provider="offline")))
    gate = Gate(monkeypatch)
    decoded_on: list[int] = []
    decode = exports.read_head

    def read_head(raw: bytes) -> Any:
        decoded_on.append(threading.get_ident())
        return decode(raw)

    monkeypatch.setattr("app.backup.registry.read_head", read_head)
    loop_thread = threading.get_ident()  # the test client and the app share the loop

    async with client.get("/api/exports/chat", headers=anna) as response:
        assert response.status == 200
        received = bytearray(await response.content.readany())
        # The second chunk is made after the first is written: wait until Anna's export
        # is held there, on its reader thread, before Bob comes.
        assert await asyncio.to_thread(gate.held.wait, 30), "the export never reached the gate"
        # Anna's export is held half-way on its reader thread; Bob is served meanwhile: his
        # own export (the other reader thread), his session, the health check.
        own = await client.get("/api/exports/chat", headers=bob)
        assert own.status == 200
        assert [m["entry_key"] for m in (await own.json())["messages"]] == [
            f"bk{n}" for n in range(10)]
        session = await client.get("/api/characters/nova/session", headers=bob)
        assert session.status == 200 and (await session.json())["turns"] == []
        assert (await client.get("/api/health")).status == 200
        assert not gate.opened.is_set()  # still half-way
        gate.opened.set()
        async for chunk in response.content.iter_chunked(1 << 16):
            received += chunk

    document = json.loads(received)
    assert [m["entry_key"] for m in document["messages"]] == [f"ak{n}" for n in range(6_000)]
    assert len(gate.made_on) > 3
    assert loop_thread not in gate.made_on, "a chunk of an export was made on the event loop"

    # An import is decoded off the loop too, item by item (Bob imports Anna's export into his
    # own data): held after its first message, Bob's session is answered meanwhile.
    item, items_on = json_input._item, []
    held, opened = threading.Event(), threading.Event()

    def gated_item(decoder: Any, piece: Any, path: str) -> Any:
        items_on.append(threading.get_ident())
        if path == "$.messages[1]":
            held.set()
            if not opened.wait(60):
                raise AssertionError("the import's gate was never opened")
        return item(decoder, piece, path)

    monkeypatch.setattr(json_input, "_item", gated_item)
    posting = asyncio.ensure_future(client.post("/api/imports", data=bytes(received),
                                                headers=bob))
    assert await asyncio.to_thread(held.wait, 60)
    session = await client.get("/api/characters/nova/session", headers=bob)
    assert session.status == 200 and not posting.done()
    opened.set()
    imported = await posting
    assert imported.status == 200, await imported.text()
    assert (await imported.json())["kind"] == "novaberg.chat"
    assert decoded_on and loop_thread not in decoded_on
    assert len(items_on) == 6_000 and loop_thread not in items_on


CHUNKED = exports.chunked


def breaking_at(monkeypatch: pytest.MonkeyPatch, fails_at: int) -> None:
    """Every export's chunks are single pieces, and the one at `fails_at` raises on the
    reader thread (a disk error, a bug in an exporter)."""
    def breaking(pieces: Any, size: int = exports.CHUNK_BYTES) -> Any:
        for n, chunk in enumerate(CHUNKED(pieces, 1)):
            if n == fails_at:
                raise RuntimeError("the disk went away")
            yield chunk

    monkeypatch.setattr(exports, "chunked", breaking)


@pytest.mark.parametrize("fmt", ["json", "md"])
async def test_an_export_that_breaks_mid_stream_is_cut_off_and_the_server_goes_on(
        make_settings, aiohttp_client, monkeypatch, caplog, fmt):
    """After the first chunk the status is sent: a later failure cannot be an error
    response. The download ends cut short (never as a whole file, never hanging), a log line
    names it, and the server serves the next export whole. Before the first chunk it is
    still the error shape. On both engines."""
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    await MessageLog(client.app[DB]).append_all([LoggedMessage(
        entry_key=f"k{n}", user_id="local", character_id="nova", turn_id=f"t{n}",
        message_ids=[f"m{n}"], role="user", occasion="", text=f"Zeile {n}",
        created=1772323200.0 + n, calendar_date="2026-03-01") for n in range(3)])
    breaking_at(monkeypatch, 0)
    early = await client.get(f"/api/exports/chat?format={fmt}", headers=AUTH)
    assert early.status == 500 and (await early.json())["error"]["code"] == "internal_error"

    breaking_at(monkeypatch, 1)  # the first chunk went out with the status
    async with asyncio.timeout(30):
        async with client.get(f"/api/exports/chat?format={fmt}", headers=AUTH) as response:
            assert response.status == 200
            with pytest.raises(aiohttp.ClientPayloadError):
                await response.read()
    [broken] = [r for r in caplog.records if r.name == "app.api.downloads"]
    assert "broken off" in broken.getMessage() and broken.exc_info is not None
    assert getattr(broken, "fields")["filename"] == f"novaberg-chat.{fmt}"

    monkeypatch.undo()
    assert (await client.get("/api/health")).status == 200
    for _ in range(3):  # more than the reader threads: none was kept by the broken ones
        whole = await client.get(f"/api/exports/chat?format={fmt}", headers=AUTH)
        assert whole.status == 200
        if fmt == "json":
            assert (await whole.json())["kind"] == "novaberg.chat"
        else:
            assert (await whole.text()).startswith("# Conversation with all characters\n")


@pytest.fixture(scope="module")
def empty_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("empty") / "novaberg.sqlite3"
    conn = connect(path)
    apply_migrations(conn)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    return path


texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@hsettings(max_examples=40, deadline=None,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(texts, st.sampled_from(["user", "assistant"])), max_size=12),
       bound=st.sampled_from([None, "2026-03-02"]), chunk=st.sampled_from([1, 64, 1 << 18]))
def test_the_streamed_json_is_the_document_itself(empty_database, tmp_path_factory, rows,
                                                 bound, chunk, monkeypatch):
    """Whatever the texts and however small the chunks: the stream is one JSON document,
    byte for byte what `json.dumps(document, ensure_ascii=False, indent=1)` writes of the
    log's rows."""
    monkeypatch.setattr("app.backup.exports.CHUNK_BYTES", chunk)
    database = tmp_path_factory.mktemp("db") / "novaberg.sqlite3"
    shutil.copyfile(empty_database, database)
    conn = sqlite3.connect(database)
    with conn:
        for n, (text, role) in enumerate(rows):
            conn.execute("INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                         "message_ids, role, origin, text, created, calendar_date) VALUES "
                         "(?, 'local', 'nova', ?, ?, ?, '', ?, ?, ?)",
                         (f"k{n}", f"t{n}", json.dumps([f"m{n}", text]), role, text,
                          float(n), "2026-03-0" + str(1 + n % 3)))
    query = make_query("local", None, bound, None)
    streamed = b"".join(stream(CHAT, conn, query, "json"))
    document = json.loads(streamed)
    expected = [{"entry_key": f"k{n}", "turn_id": f"t{n}", "message_ids": [f"m{n}", text],
                 "character_id": "nova", "role": role, "origin": "", "text": text,
                 "created": float(n), "calendar_date": "2026-03-0" + str(1 + n % 3)}
                for n, (text, role) in enumerate(rows)
                if bound is None or "2026-03-0" + str(1 + n % 3) >= bound]
    assert [{k: v for k, v in m.items() if k != "at"} for m in document["messages"]] == expected
    assert streamed.decode() == json.dumps(document, ensure_ascii=False, indent=1)
    conn.close()


def test_a_journal_export_streams_with_every_version(tmp_path):
    database = tmp_path / "novaberg.sqlite3"
    conn = connect(database)
    apply_migrations(conn)
    with conn:
        conn.execute("INSERT INTO journal_spaces (space_id, user_id, created_at) "
                     "VALUES ('s', 'local', 1.0)")
        for n in range(40):
            day = f"2026-02-{1 + n % 28:02d}" if n < 28 else f"2026-01-{n - 27:02d}"
            conn.execute("INSERT INTO journal_days (day_id, space_id, calendar_date, created_at) "
                         "VALUES (?, 's', ?, 1.0)", (f"d{n}", day))
            conn.execute("INSERT INTO journal_entries (entry_id, journal_day_id, "
                         "current_version_id, created_at) VALUES (?, ?, ?, 1.0)",
                         (f"e{n}", f"d{n}", f"v{n}-2"))
            for seq in (1, 2):
                conn.execute("INSERT INTO journal_entry_versions (version_id, entry_id, seq, "
                             "origin, text, created_at) VALUES (?, ?, ?, ?, ?, 1.0)",
                             (f"v{n}-{seq}", f"e{n}", seq, "draft" if seq == 1 else "edit",
                              "".join(random.Random(n).choices(string.ascii_letters, k=9000))))
    document = json.loads(b"".join(stream(JOURNAL, conn, make_query("local"), "json")))
    assert [e["date"] for e in document["entries"]] == sorted(e["date"]
                                                              for e in document["entries"])
    assert len(document["entries"]) == 40
    assert all([v["seq"] for v in e["versions"]] == [1, 2] for e in document["entries"])
    markdown = b"".join(stream(JOURNAL, conn, make_query("local"), "md")).decode()
    assert markdown.startswith("# Journal\n\n## 2026-01-01\n\n") and markdown.count("\n## ") == 40
    conn.close()
