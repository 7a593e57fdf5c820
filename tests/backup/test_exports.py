"""Conversation exports (Markdown, JSON) and their import into another install, through the
real API and the real CLI, over the durable message log the dispatcher writes."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path

import pytest

from app.api.app_keys import DB, REDIS
from app.backup.access import redis_url_of
from app.backup.chat_export import on_redis
from app.backup.database import table_exists
from app.core.settings import defaults
from app.memory import keys
from app.memory.lists import ListStore
from app.memory.long_term import Change, LongTermMemory
from app.memory.message_log import LoggedMessage, MessageLog
from app.memory.reminders import ReminderStore, completed
from app.storage.database import connect
from app.storage.datadir import DATABASE_FILE
from app.storage.migrations import apply_migrations
from app.wiring.cli import main
from app.wiring.server import REDIS_DIR, create_app
from tests.conftest import AUTH, TOKEN
from tests.pipeline_support import fake_app, open_chat
from tests.store import live_connection

DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")


async def cli(argv: list[str]) -> int:
    """The command line, from an async test: in a thread, as its chat export and import run
    an event loop of their own (as a real command line does)."""
    return await asyncio.to_thread(main, argv)


def define_luna(data_dir: Path) -> None:
    """The second character of these tests, defined in `data_dir` (an import refuses the
    items of a character the install does not have)."""
    folder = data_dir / "characters"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "luna.toml").write_text('id = "luna"\nname = "Luna"\nlanguage = "de"\n'
                                      'persona = "Du bist Luna."\n', encoding="utf-8")


async def log_days(app, character_id: str = "nova") -> None:
    """Two lines per day on three days, written through the real message log."""
    log = MessageLog(app[DB])
    for n, day in enumerate(DAYS):
        created = 1772323200.0 + n * 86400
        await log.append(LoggedMessage(f"{character_id}-{day}-u", "local", character_id,
                                       f"t-{character_id}-{n}", [f"m-{character_id}-{n}"],
                                       "user", "", f"# Tag {n}: Ich war im Park.", created, day))
        await log.append(LoggedMessage(f"{character_id}-{day}-a", "local", character_id,
                                       f"t-{character_id}-{n}", [f"m-{character_id}-{n}"],
                                       "assistant", "antwort", f"Schön! ({n})", created + 5,
                                       day))


async def test_chat_export_from_the_api_as_json_and_markdown(make_settings, aiohttp_client):
    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    await log_days(app)
    await log_days(app, "luna")

    response = await client.get("/api/exports/chat?character=nova&from=2026-03-02&format=json",
                                headers=AUTH)
    assert response.status == 200
    assert "attachment" in response.headers["Content-Disposition"]
    document = json.loads(await response.text())
    assert document["kind"] == "novaberg.chat" and document["format_version"] == 1
    assert [m["calendar_date"] for m in document["messages"]] == [
        "2026-03-02", "2026-03-02", "2026-03-03", "2026-03-03"]
    assert {m["character_id"] for m in document["messages"]} == {"nova"}
    assert document["messages"][0]["entry_key"] == "nova-2026-03-02-u"
    assert document["messages"][0]["message_ids"] == ["m-nova-1"]

    response = await client.get("/api/exports/chat?character=nova&to=2026-03-01&format=md",
                                headers=AUTH)
    assert response.status == 200 and response.content_type == "text/markdown"
    text = await response.text()
    assert text.startswith("# Conversation with nova\n")
    assert "## 2026-03-01" in text and "## 2026-03-02" not in text
    # A user line that looks like a heading stays text.
    assert "\\# Tag 0: Ich war im Park." in text and "**You** · " in text
    assert "**nova** · " in text and "Schön! (0)" in text


@pytest.mark.parametrize("query, status, code", [
    ("format=pdf", 400, "invalid_format"),
    ("from=gestern", 400, "invalid_export"),
    ("from=2026-03-03&to=2026-03-01", 400, "invalid_export"),
    ("character=nobody", 404, "unknown_character"),
])
async def test_bad_export_queries_are_refused(make_settings, aiohttp_client, query, status, code):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    response = await client.get(f"/api/exports/chat?{query}", headers=AUTH)
    assert response.status == status
    assert (await response.json())["error"]["code"] == code
    unknown = await client.get("/api/exports/diary", headers=AUTH)
    assert unknown.status == 404


async def test_import_into_another_install_keeps_ids_and_adds_no_duplicates(
        fake_model, make_settings, aiohttp_client, tmp_path):
    fake_model.always("responder", "Klingt gut.")
    app = fake_app(fake_model, make_settings, input_window_seconds=0.0)
    chat = await open_chat(aiohttp_client, app)
    for text in ("Hallo Nova", "Heute scheint die Sonne"):
        await chat.response(await chat.send(text))
    await chat.settle()
    exported = await (await chat.client.get("/api/exports/chat", headers=AUTH)).read()
    assert len(json.loads(exported)["messages"]) == 4

    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other),
                                                      llm_provider="offline"),
                                             local_token=TOKEN))
    first = await second.post("/api/imports", data=exported, headers=AUTH)
    assert first.status == 200
    nothing = {"imported": 0, "skipped": 0}
    assert await first.json() == {"kind": "novaberg.chat", "imported": 4, "skipped": 0,
                                  "parts": {"messages": {"imported": 4, "skipped": 0},
                                            "lists": nothing, "reminders": nothing}}
    again = await second.post("/api/imports", data=exported, headers=AUTH)
    assert (await again.json())["imported"] == 0 and (await again.json())["skipped"] == 4

    reexported = json.loads(await (await second.get("/api/exports/chat",
                                                    headers=AUTH)).read())
    assert reexported["messages"] == json.loads(exported)["messages"]


def imported(entry_key: str, text: str, created: float = 1772323200.0) -> dict[str, object]:
    return {"entry_key": entry_key, "turn_id": f"t-{entry_key}", "character_id": "nova",
            "role": "user", "text": text, "created": created, "calendar_date": "2026-03-01"}


async def test_an_imported_chat_is_searchable_and_so_is_what_is_said_after_it(
        aiohttp_client, tmp_path):
    """An import fills the search index once for all its rows (the per-row insert trigger is
    set aside meanwhile): what it brought, what was there before and what is said after are
    each found once; a row that was there already is skipped and not indexed again."""
    client = await aiohttp_client(create_app(defaults(data_dir=str(tmp_path),
                                                      llm_provider="offline"),
                                             local_token=TOKEN))
    log = MessageLog(client.app[DB])
    await log.append(LoggedMessage("here-1", "local", "nova", "t-here", ["m-here"], "user", "",
                                   "Ich fahre nach Leipzig.", 1772323200.0, "2026-03-01"))
    body = {"kind": "novaberg.chat", "format_version": 1, "messages": [
        imported("here-1", "Ich fahre nach Leipzig."),
        imported("imp-1", "Die Leipziger Messe ist groß.", 1772323260.0),
        imported("imp-2", "Zimmer 4711 im Hotel", 1772323320.0)]}
    response = await client.post("/api/imports", data=json.dumps(body), headers=AUTH)
    assert (await response.json())["parts"]["messages"] == {"imported": 2, "skipped": 1}
    await log.append(LoggedMessage("after-1", "local", "nova", "t-after", ["m-after"], "user",
                                   "", "Danach: Leipzig im Regen.", 1772323380.0, "2026-03-01"))

    async def found(query: str) -> list[str]:
        answer = await client.get("/api/characters/nova/history/search",
                                  params={"q": query}, headers=AUTH)
        assert answer.status == 200
        return sorted(hit["text"] for hit in (await answer.json())["hits"])

    assert await found("Leipzig") == ["Danach: Leipzig im Regen.",
                                      "Die Leipziger Messe ist groß.", "Ich fahre nach Leipzig."]
    assert await found("4711") == ["Zimmer 4711 im Hotel"]


def test_a_bulk_insert_that_fails_leaves_the_log_and_its_search_trigger_as_they_were(tmp_path):
    """The trigger is dropped inside the import's transaction: a failure rolls the drop back
    with the rows, and the next row said is indexed as ever."""
    from app.backup.chat_export import _append_log_rows

    conn = connect(tmp_path / "db.sqlite3")
    apply_migrations(conn)
    good = ("k-1", "local", "nova", "t-1", "[]", "user", "", "Leipzig", 1.0, "2026-03-01", 2.0)
    bad = ("k-2", "local", "nova", "t-2", "[]", "user", "", None, 1.0, "2026-03-01", 2.0)
    with pytest.raises(sqlite3.IntegrityError):
        with conn:
            _append_log_rows(conn, [good, bad], 2.0)
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    assert conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                        "AND name = 'messages_fts_insert'").fetchone()
    with conn:
        conn.execute("INSERT INTO messages (entry_key, user_id, character_id, turn_id, role, "
                     "text, created, calendar_date) VALUES ('k-3', 'local', 'nova', 't-3', "
                     "'user', 'Leipziger Messe', 1.0, '2026-03-01')")
    assert conn.execute("SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'Leipzig'"
                        ).fetchone()[0] == 1
    conn.close()


@pytest.mark.parametrize("body, expected", [
    (b"not json", "not a Novaberg export"),
    (b'{"kind": "novaberg.diary", "format_version": 1}', "kind 'novaberg.diary'"),
    (b'{"kind": "novaberg.chat", "format_version": 7, "messages": []}', "format_version 7"),
    (json.dumps({"kind": "novaberg.chat", "format_version": 1, "messages": [
        {"entry_key": "ok", "turn_id": "t", "character_id": "nova", "role": "user",
         "text": "fine", "created": 1.0, "calendar_date": "2026-01-01"},
        {"entry_key": "bad", "turn_id": "t", "character_id": "nova", "role": "system",
         "text": "x", "created": 1.0, "calendar_date": "2026-01-01"}]}).encode(), "role"),
    (json.dumps({"kind": "novaberg.chat", "format_version": 1, "messages": [
        {"entry_key": "ok", "turn_id": "t", "character_id": "nova", "role": "user",
         "text": "fine", "created": 1.0, "calendar_date": "Montag"}]}).encode(), "Montag"),
    # A time no date can be made of would break every later view of the log (Markdown).
    (json.dumps({"kind": "novaberg.chat", "format_version": 1, "messages": [
        {"entry_key": "ok", "turn_id": "t", "character_id": "nova", "role": "user",
         "text": "fine", "created": 1e308, "calendar_date": "2026-01-01"}]}).encode(),
     "created"),
])
async def test_a_bad_import_is_refused_and_writes_nothing(make_settings, aiohttp_client, data_dir,
                                                          body, expected):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    response = await client.post("/api/imports", data=body, headers=AUTH)
    await refused_with_no_message_written(response, data_dir, expected)


async def refused_with_no_message_written(response, data_dir, expected: str) -> None:
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "invalid_import" and expected in error["message"]
    conn = live_connection(data_dir)
    assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0
    conn.close()


async def test_lists_and_reminders_travel_in_the_chat_export_and_import(
        make_settings, aiohttp_client, tmp_path):
    """Issue 21, item 2: the chat export carries the lists and reminders (JSON and
    Markdown); importing adds what is missing with its ids, and twice adds nothing."""
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    store = ListStore(client.app[REDIS], "local", "nova")
    await store.apply("Einkaufsliste", add=["Milch", "Eier"])
    await store.apply("Leer")
    reminders = ReminderStore(client.app[REDIS])
    due = time.time() + 3600
    pending = await reminders.add("local", "nova", "Zahnarzt", due)
    done = await reminders.add("local", "nova", "Müll", due + 60)
    await reminders.update("local", "nova", done.id, completed)
    exported = await (await client.get("/api/exports/chat?character=nova",
                                       headers=AUTH)).read()
    document = json.loads(exported)
    assert [(k["name"], k["items"]) for k in document["lists"]] == [
        ("Einkaufsliste", ["Milch", "Eier"]), ("Leer", [])]
    assert [(r["id"], r["text"], r["status"]) for r in document["reminders"]] == [
        (pending.id, "Zahnarzt", "pending"), (done.id, "Müll", "done")]
    markdown = await (await client.get("/api/exports/chat?format=md", headers=AUTH)).text()
    assert "## Lists" in markdown and "### Einkaufsliste (nova)" in markdown
    assert "- Milch" in markdown and "## Reminders" in markdown and "Zahnarzt · pending" in markdown

    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other),
                                                      llm_provider="offline"),
                                             local_token=TOKEN))
    there = ListStore(second.app[REDIS], "local", "nova")
    await there.apply("Einkaufsliste", add=["Brot", "milch"])  # kept; only Eier is missing
    first = await second.post("/api/imports", data=exported, headers=AUTH)
    assert (await first.json())["parts"] == {
        "messages": {"imported": 0, "skipped": 0}, "lists": {"imported": 2, "skipped": 1},
        "reminders": {"imported": 2, "skipped": 0}}
    again = await second.post("/api/imports", data=exported, headers=AUTH)
    assert (await again.json())["imported"] == 0
    assert {k.name: k.items for k in await there.all()} == {
        "Einkaufsliste": ["Brot", "milch", "Eier"], "Leer": []}
    imported = {r.id: r for r in await ReminderStore(second.app[REDIS]).list("local", "nova")}
    assert set(imported) == {pending.id, done.id}
    assert (imported[pending.id].due_at, imported[done.id].status) == (due, "done")
    members = await second.app[REDIS].zrange(keys.reminders_due(), 0, -1)
    assert members == [pending.member]  # the pending one will come; the done one will not


@pytest.mark.parametrize("kept, expected", [
    ({"lists": [{"character_id": "nova", "name": "", "items": []}]}, "name"),
    ({"lists": [{"character_id": "nova", "name": "L", "items": [""]}]}, "items"),
    ({"reminders": [{"id": "a b", "character_id": "nova", "text": "x", "due_at": 1.0,
                     "created_at": 1.0}]}, "id"),
    ({"reminders": [{"id": "r1", "character_id": "nova", "text": "x", "due_at": -5,
                     "created_at": 1.0}]}, "due_at"),
    ({"reminders": [{"id": "r1", "character_id": "nova", "text": "x", "due_at": 1.0,
                     "created_at": 1.0, "status": "later"}]}, "status"),
    ({"reminders": [{"id": "r1", "character_id": "nova", "text": "x", "due_at": 1.0,
                     "created_at": 1.0, "user_id": "bob"}]}, "user_id"),
])
async def test_a_bad_list_or_reminder_refuses_the_whole_import(make_settings, aiohttp_client,
                                                              data_dir, kept, expected):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    body = {"kind": "novaberg.chat", "format_version": 1, "messages": [
        {"entry_key": "ok", "turn_id": "t", "character_id": "nova", "role": "user",
         "text": "fine", "created": 1.0, "calendar_date": "2026-01-01"}],
        "lists": [{"character_id": "nova", "name": "Gut", "items": ["a"]}], **kept}
    response = await client.post("/api/imports", json=body, headers=AUTH)
    await refused_with_no_message_written(response, data_dir, expected)
    assert await ListStore(client.app[REDIS], "local", "nova").all() == []
    assert await ReminderStore(client.app[REDIS]).list("local", "nova") == []


def test_lists_and_reminders_round_trip_through_the_command_line(tmp_path, capsys,
                                                                 other_store):
    """`novaberg export chat` carries the lists and reminders of the data dir's own Redis
    (started by the command, the app not running); `novaberg import` adds them to another
    data dir, twice adds nothing, and its export carries the same lists and reminders."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    apart = other_store()  # the second install's store
    due = time.time() + 3600

    async def seed(redis):
        store = ListStore(redis, "local", "nova")
        await store.apply("Einkaufsliste", add=["Milch", "Eier"])
        await store.apply("Baumarkt", add=["Schrauben"])
        reminders = ReminderStore(redis)
        await reminders.add("local", "nova", "Zahnarzt", due)
        done = await reminders.add("local", "nova", "Müll", due + 60)
        await reminders.update("local", "nova", done.id, completed)

    conn = live_connection(first)  # an install with no message yet
    apply_migrations(conn)
    conn.close()
    with redis_url_of(defaults(data_dir=str(first)), app_running=False) as url:
        asyncio.run(on_redis(url, seed))
    out = tmp_path / "chat.json"
    assert main(["--data-dir", str(first), "export", "chat", "--format", "json",
                 "--out", str(out)]) == 0
    exported = json.loads(out.read_text())
    assert [(k["name"], k["items"]) for k in exported["lists"]] == [
        ("Einkaufsliste", ["Milch", "Eier"]), ("Baumarkt", ["Schrauben"])]
    assert [(r["text"], r["status"]) for r in exported["reminders"]] == [
        ("Zahnarzt", "pending"), ("Müll", "done")]

    assert main(["--data-dir", str(second), *apart, "import", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "lists: imported 3, skipped 0" in printed and "reminders: imported 2" in printed
    assert main(["--data-dir", str(second), *apart, "import", str(out)]) == 0
    assert "imported 0, skipped 5" in capsys.readouterr().out
    back = tmp_path / "back.json"
    assert main(["--data-dir", str(second), *apart, "export", "chat", "--format", "json",
                 "--out", str(back)]) == 0
    again = json.loads(back.read_text())
    assert again["lists"] == exported["lists"] and again["reminders"] == exported["reminders"]

    async def due_members(redis):
        return await redis.zrange(keys.reminders_due(), 0, -1)

    with redis_url_of(defaults(data_dir=str(second)), app_running=False) as url:
        members = asyncio.run(on_redis(url, due_members))
    assert members == [keys.reminder_member("local", "nova", exported["reminders"][0]["id"])]


@pytest.mark.parametrize("kind", ["chat", "journal", "memories"])
def test_an_export_from_a_store_never_set_up_says_there_is_nothing(data_dir, capsys, kind):
    """A store no Novaberg has opened — an empty SQLite file, the fresh PostgreSQL database
    of an install whose app never ran — has no tables: the command says there is nothing to
    export (as with no database at all), with no traceback, and starts no Redis for it."""
    (data_dir / DATABASE_FILE).touch()
    assert main(["--data-dir", str(data_dir), "export", kind, "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "nothing to export" in err and "Traceback" not in err
    assert not (data_dir / REDIS_DIR).exists()


def test_a_bad_reminder_refuses_the_command_line_import_whole(tmp_path, capsys,
                                                              database_url):
    body = {"kind": "novaberg.chat", "format_version": 1, "messages": [
        {"entry_key": "ok", "turn_id": "t", "character_id": "nova", "role": "user",
         "text": "fine", "created": 1.0, "calendar_date": "2026-01-01"}],
        "reminders": [{"id": "r1", "character_id": "nova", "text": "x", "due_at": -5,
                       "created_at": 1.0}]}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(body))
    target = tmp_path / "target"
    assert main(["--data-dir", str(target), "import", str(bad)]) == 2
    assert "due_at" in capsys.readouterr().err
    # Nothing stored: no store, a store without tables, or one without a message (SQLite's
    # file or, under --engine=postgresql, the test's database).
    if database_url or (target / DATABASE_FILE).exists():
        conn = live_connection(target)
        try:
            assert not table_exists(conn, "messages") or conn.execute(
                "SELECT count(*) FROM messages").fetchone()[0] == 0
        finally:
            conn.close()


async def test_an_import_over_the_limit_is_refused(make_settings, aiohttp_client):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline",
                                                           import_max_bytes=1024),
                                             local_token=TOKEN))
    response = await client.post("/api/imports", data=b"x" * 2048, headers=AUTH)
    assert response.status == 413
    assert "import_max_bytes" in (await response.json())["error"]["message"]


# The command line's chat export reads the data dir's own Redis (a real embedded one).
@pytest.mark.own_redis
async def test_cli_export_and_import(make_settings, aiohttp_client, data_dir, tmp_path, capsys,
                                     other_store):
    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    await log_days(app)
    await client.close()

    out = tmp_path / "chat.json"
    assert await cli(["--data-dir", str(data_dir), "export", "chat", "--format", "json",
                 "--from", "2026-03-02", "--out", str(out)]) == 0
    assert len(json.loads(out.read_text())["messages"]) == 4
    assert await cli(["--data-dir", str(data_dir), "export", "chat", "--character", "nova"]) == 0
    markdown = capsys.readouterr().out
    assert markdown.count("## 2026-03-0") == 3

    other, apart = tmp_path / "other", other_store()
    assert await cli(["--data-dir", str(other), *apart, "import", str(out)]) == 0
    assert "imported 4, skipped 0" in capsys.readouterr().out
    assert await cli(["--data-dir", str(other), *apart, "import", str(out)]) == 0
    assert "imported 0, skipped 4" in capsys.readouterr().out
    assert await cli(["--data-dir", str(other), *apart, "export", "chat",
                      "--from", "gestern"]) == 2
    assert "not a date" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert await cli(["--data-dir", str(other), *apart, "import", str(bad)]) == 2
    assert "not a Novaberg export" in capsys.readouterr().err
    assert await cli(["--data-dir", str(other), *apart, "import",
                      str(Path(tmp_path / "missing.json"))]) == 2
    # A folder as --out: one file per item is a journal matter; a chat is refused clearly.
    assert await cli(["--data-dir", str(other), *apart, "export", "chat",
                      "--out", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


async def remember_days(app) -> dict[str, str]:
    """Memories of two characters told at noon on the three days, one of them corrected,
    written through the real long-term store."""
    store = LongTermMemory(app[DB])
    ids = {}
    for n, (character, text) in enumerate((("nova", "Jana wohnt in Leipzig."),
                                           ("luna", "Ich mag Tee."),
                                           ("nova", "# Ich spiele Cello."))):
        applied = await store.apply(f"t{n}", "local", character, [Change("remember", text)],
                                    [f"m{n}"], 1772323200.0 + 43200 + n * 86400)
        ids[text] = applied.added[0]
    fixed = await store.apply("t3", "local", "nova", [Change(
        "supersede", "Jana wohnt in Dresden.", "person", 0.9, ids["Jana wohnt in Leipzig."])],
        ["m3"], 1772323200.0 + 43200 + 2 * 86400 + 60)
    ids["Jana wohnt in Dresden."] = fixed.added[0]
    return ids


async def test_memory_export_as_json_and_markdown(make_settings, aiohttp_client):
    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    ids = await remember_days(app)

    response = await client.get("/api/exports/memories?character=nova&format=json",
                                headers=AUTH)
    assert response.status == 200
    document = json.loads(await response.text())
    assert document["kind"] == "novaberg.memories" and document["format_version"] == 1
    memories = {m["text"]: m for m in document["memories"]}
    assert set(memories) == {"Jana wohnt in Leipzig.", "# Ich spiele Cello.",
                             "Jana wohnt in Dresden."}
    old = memories["Jana wohnt in Leipzig."]
    assert old["memory_id"] == ids[old["text"]] and old["calendar_date"] == "2026-03-01"
    assert old["superseded_by"] == ids["Jana wohnt in Dresden."]
    assert old["source_message_ids"] == ["m0"] and old["character_id"] == "nova"
    dated = await client.get("/api/exports/memories?from=2026-03-02&to=2026-03-02&format=json",
                             headers=AUTH)
    assert [m["text"] for m in json.loads(await dated.text())["memories"]] == ["Ich mag Tee."]

    response = await client.get("/api/exports/memories?format=md", headers=AUTH)
    assert response.status == 200 and response.content_type == "text/markdown"
    text = await response.text()
    assert text.startswith("# What the characters remember\n")
    assert text.index("## luna") < text.index("## nova")
    assert "- (2026-03-02, fact) Ich mag Tee." in text
    assert f"Jana wohnt in Leipzig. — corrected by {ids['Jana wohnt in Dresden.']}" in text
    assert "\n- (2026-03-03, fact) # Ich spiele Cello." in text  # no heading of its own


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "Pacific/Kiritimati", "Etc/GMT+12"])
async def test_a_moment_stored_beyond_what_a_zone_shows_still_exports(make_settings,
                                                                     aiohttp_client, zone):
    """Moments an older version took (9999-12-31T23:00Z: year 10000 east of UTC) or that
    were written by hand are shown at the last moment every zone shows: the user's exports
    answer, as Markdown and as JSON, instead of a 500 for good."""
    app = create_app(make_settings(llm_provider="offline", timezone=zone), local_token=TOKEN)
    client = await aiohttp_client(app)
    log = MessageLog(app[DB])
    for n, created in enumerate((253402297200.0, 1e18, -1e18)):
        await log.append(LoggedMessage(f"late-{n}", "local", "nova", f"t-{n}", [f"m-{n}"],
                                       "user", "", f"Spät {n}", created, "9999-12-31"))
    store = LongTermMemory(app[DB])
    for n, created in enumerate((253402297200.0, 1e18)):
        await store.apply(f"t{n}", "local", "nova", [Change("remember", f"Spät {n}.")],
                          [f"m{n}"], created)

    for kind in ("chat", "memories"):
        for form in ("md", "json"):
            response = await client.get(f"/api/exports/{kind}?format={form}", headers=AUTH)
            assert response.status == 200, (kind, form)
            assert "Spät 1" in await response.text()
    chat = await (await client.get("/api/exports/chat?format=md", headers=AUTH)).text()
    assert chat.count("**You** · ") == 3


async def test_memory_import_keeps_ids_adds_no_duplicates_and_is_searchable(
        make_settings, aiohttp_client, tmp_path):
    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    ids = await remember_days(app)
    exported = await (await client.get("/api/exports/memories", headers=AUTH)).read()

    other = tmp_path / "other"
    other.mkdir()
    second = await aiohttp_client(create_app(defaults(data_dir=str(other),
                                                      llm_provider="offline"),
                                             local_token=TOKEN))
    refused = await second.post("/api/imports", data=exported, headers=AUTH)
    assert refused.status == 400 and "'luna' does not exist here" in await refused.text()
    define_luna(other)
    first = await second.post("/api/imports", data=exported, headers=AUTH)
    assert await first.json() == {"kind": "novaberg.memories", "imported": 4, "skipped": 0}
    again = await second.post("/api/imports", data=exported, headers=AUTH)
    assert await again.json() == {"kind": "novaberg.memories", "imported": 0, "skipped": 4}
    reexported = json.loads(await (await second.get("/api/exports/memories", headers=AUTH)).read())
    assert reexported["memories"] == json.loads(exported)["memories"]
    # The FTS index took them: search and the enricher's ranking find them, live ones only.
    found = await (await second.get("/api/characters/nova/memories", params={"q": "Jana"},
                                    headers=AUTH)).json()
    assert [m["memory_id"] for m in found] == [ids["Jana wohnt in Dresden."]]
    ranked = await LongTermMemory(second.app[DB]).relevant("local", "luna", "Trinkst du Tee?",
                                                           top_k=5, now=1.8e9)
    assert [m.memory_id for m in ranked] == [ids["Ich mag Tee."]]


async def test_every_imported_memory_can_be_edited_and_forgotten_by_its_id(
        make_settings, aiohttp_client):
    """Issue 38 item 15: an import took any id, the routes only hex ones: 404 for good."""
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    memory = {"memory_id": "0b" * 16, "character_id": "nova", "text": "Ich mag Tee.",
              "kind": "fact", "importance": 0.5, "created_at": 1.0, "refreshed_at": 1.0}
    body = json.dumps({"kind": "novaberg.memories", "format_version": 1,
                       "memories": [memory]}).encode()
    assert (await client.post("/api/imports", data=body, headers=AUTH)).status == 200
    path = f"/api/characters/nova/memories/{memory['memory_id']}"
    edited = await client.put(path, json={"text": "Ich mag Kaffee."}, headers=AUTH)
    assert edited.status == 200 and (await edited.json())["text"] == "Ich mag Kaffee."
    assert (await client.delete(path, headers=AUTH)).status == 204
    # An id no route could name is refused whole, in the error shape, nothing stored.
    odd = json.dumps({"kind": "novaberg.memories", "format_version": 1,
                      "memories": [{**memory, "memory_id": "tee-1"}]}).encode()
    refused = await client.post("/api/imports", data=odd, headers=AUTH)
    assert refused.status == 400
    assert "memory_id is not 32 lowercase hex" in (await refused.json())["error"]["message"]
    listed = await client.get("/api/characters/nova/memories", headers=AUTH)
    assert await listed.json() == []


@pytest.mark.parametrize("change, expected", [
    ({"kind": "secret"}, "kind 'secret'"),
    ({"importance": 7.0}, "importance 7.0"),
    ({"text": "  "}, "text is empty"),
    ({"memory_id": ""}, "memory_id is empty"),
    ({"memory_id": "m1"}, "memory_id is not 32 lowercase hex digits"),
    ({"memory_id": "A2" * 16}, "memory_id is not 32 lowercase hex digits"),
    ({"owner": "x"}, "owner"),
    ({"created_at": -1e300}, "created_at"),
    ({"last_used_at": 1e308}, "last_used_at"),
])
async def test_a_bad_memory_import_is_refused_and_writes_nothing(
        make_settings, aiohttp_client, data_dir, change, expected):
    client = await aiohttp_client(create_app(make_settings(llm_provider="offline"),
                                             local_token=TOKEN))
    good = {"memory_id": "a1" * 16, "character_id": "nova", "text": "Ich mag Tee.", "kind": "fact",
            "importance": 0.5, "created_at": 1.0, "refreshed_at": 1.0}
    body = json.dumps({"kind": "novaberg.memories", "format_version": 1,
                       "memories": [good, {**good, "memory_id": "a2" * 16, **change}]}).encode()
    response = await client.post("/api/imports", data=body, headers=AUTH)
    assert response.status == 400
    error = (await response.json())["error"]
    assert error["code"] == "invalid_import" and expected in error["message"]
    conn = live_connection(data_dir)
    assert conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 0
    conn.close()


async def test_cli_export_and_import_of_memories(make_settings, aiohttp_client, data_dir,
                                                 tmp_path, capsys, other_store):
    app = create_app(make_settings(llm_provider="offline"), local_token=TOKEN)
    client = await aiohttp_client(app)
    await remember_days(app)
    await client.close()

    out = tmp_path / "memories.json"
    assert main(["--data-dir", str(data_dir), "export", "memories", "--character", "luna",
                 "--format", "json", "--out", str(out)]) == 0
    assert [m["text"] for m in json.loads(out.read_text())["memories"]] == ["Ich mag Tee."]
    assert main(["--data-dir", str(data_dir), "export", "memories"]) == 0
    assert capsys.readouterr().out.count("\n- (") == 4
    other, apart = tmp_path / "other", other_store()
    define_luna(other)
    assert main(["--data-dir", str(other), *apart, "import", str(out)]) == 0
    assert "imported 1, skipped 0" in capsys.readouterr().out
