"""The durable message log in SQLite: every stored turn has its row, written by the
dispatcher through the one writer, and a rerun of the same write adds nothing."""

from __future__ import annotations

import datetime as dt
import sqlite3
import time

from app.api.app_keys import DB, RUNTIME
from app.core.clock import calendar_date
from app.memory.message_log import LoggedMessage, MessageLog
from app.storage.database import Database
from tests.pipeline_support import fake_app, open_chat


async def test_the_log_holds_every_turn(fake_model, make_settings, aiohttp_client):
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    fake_model.script("thinker", {"follow_up": True, "intent": "nachfragen"})
    fake_model.script("responder", "Das tut mir leid.", "Magst du erzählen?", "Ich bin da.",
                      "Zweite Antwort.")

    first = await chat.send("Heute war ein schwerer Tag")
    await chat.response(first, origin="continue")
    turn_id = await app[RUNTIME].submit_impulse("local", "nova", "Ich denke an dich.")
    await chat.response(turn_id=turn_id)
    second = await chat.send("Danke dir")
    await chat.response(second)
    await chat.settle()

    turns = await chat.session()
    rows = await MessageLog(app[DB]).for_user("local", character_id="nova")
    assert [(r.turn_id, r.role, r.occasion, r.text, r.message_ids) for r in rows] == [
        (t["turn_id"], t["rolle"], t["herkunft"], t["inhalt"], t["nachrichten_ids"])
        for t in turns]
    assert [r.occasion for r in rows if r.role == "assistant"] == [
        "antwort", "fortsetzung", "eigener_impuls", "antwort"]
    today = dt.date.today().isoformat()
    assert {r.calendar_date for r in rows} == {today}
    assert rows == await MessageLog(app[DB]).for_user("local", day=today)
    assert await MessageLog(app[DB]).for_user("local", day="2000-01-01") == []
    assert await MessageLog(app[DB]).for_user("someone-else") == []


async def test_writing_the_same_turn_again_adds_no_row(tmp_path):
    db = Database(tmp_path / "log.sqlite3")
    assert "m002_messages" in await db.open()
    log = MessageLog(db)
    now = time.time()
    entry = LoggedMessage(entry_key="t1:user", user_id="local", character_id="nova",
                          turn_id="t1", message_ids=["m1", "m2"], role="user", occasion="",
                          text="Hallo\nDu", created=now, calendar_date=calendar_date(now))
    assert await log.append(entry) is True
    assert await log.append(entry) is False
    assert await log.for_user("local") == [entry]
    await db.close()


async def test_the_table_comes_from_an_append_only_migration(tmp_path):
    db = Database(tmp_path / "fresh.sqlite3")
    await db.open()

    def columns(conn: sqlite3.Connection) -> list[str]:
        return [row[1] for row in conn.execute("PRAGMA table_info(messages)")]

    assert await db.execute_fn(columns) == [
        "id", "entry_key", "user_id", "character_id", "turn_id", "message_ids", "role",
        "origin", "text", "created", "calendar_date", "imported_at"]  # m008: the history's
    await db.close()
    again = Database(tmp_path / "fresh.sqlite3")
    assert await again.open() == []  # nothing runs twice
    await again.close()


def test_the_calendar_day_is_the_local_day():
    moment = dt.datetime(2026, 11, 30, 23, 59).astimezone()
    assert calendar_date(moment.timestamp()) == "2026-11-30"


async def test_short_term_memory_keeps_the_newest_entries_and_says_when_it_drops(
        redis_client, make_settings, caplog):
    from app.memory.short_term import ShortTermMemory
    settings = make_settings(short_term_memory_max_entries=3, short_term_memory_ttl=60)
    memory = ShortTermMemory(redis_client, settings)
    now = time.time()
    await memory.add("local", "nova", ["alt"], turn_id="t0", role="user", importance=0.9,
                     now=now - 120)  # expired a minute ago
    for i in range(4):
        await memory.add("local", "nova", [f"Satz {i}"], turn_id=f"t{i}", role="user",
                         importance=0.9, now=now + i)
    entries = await memory.recent("local", "nova", 10)
    assert [e.text for e in entries] == ["Satz 1", "Satz 2", "Satz 3"]
    assert await memory.recent("local", "nova", 2) == entries[1:]
    assert any(r.fields.get("limit") == "short_term_memory_max_entries"
               for r in caplog.records if hasattr(r, "fields"))


async def test_a_rerun_after_a_crash_stores_each_turn_once(fake_model, make_settings,
                                                          aiohttp_client):
    from app.api.app_keys import GATEWAY, PIPELINES, REDIS, SESSION, SETTINGS
    from app.pipeline.vocabulary import (
        CharacterRun,
        Event,
        PipelineContext,
        UserBlock,
        UserPayload,
    )
    app = fake_app(fake_model, make_settings)
    chat = await open_chat(aiohttp_client, app)
    fake_model.script("responder", "Erste Antwort.", "Zweite Antwort.")
    sent = await chat.send("Hallo")
    answer = await chat.response(sent)
    await chat.settle()
    turn_id = answer["turn_id"]

    async def stage(name: str) -> None:
        return None

    # What recovery does after a crash between the dispatcher's writes and the delivery:
    # the same block and the same event run again.
    ctx = PipelineContext(settings=app[SETTINGS], redis=app[REDIS], memory=app[SESSION],
                          gateway=app[GATEWAY], stage=stage, guard=None)
    pipelines = app[PIPELINES]
    await pipelines.path1(ctx, UserBlock(turn_id=turn_id, user_id="local", character_id="nova",
                                         message_ids=(sent,), texts=("Hallo",),
                                         received_at=(time.time(),), attempt=2))
    event = Event(event_id="e", user_id="local", character_id="nova", source="user",
                  typ="message", payload=UserPayload(turn_id=turn_id, message_ids=[sent],
                                                     user_prompt="Hallo"))
    result = await pipelines.path2(ctx, CharacterRun(
        turn_id=turn_id, user_id="local", character_id="nova", event=event,
        message_ids=(sent,), origin="reply", attempt=2))

    assert result.text == "Erste Antwort."  # the user sees what was stored, not a second one
    assert [(t["rolle"], t["inhalt"]) for t in await chat.session()] == [
        ("user", "Hallo"), ("assistant", "Erste Antwort.")]
    rows = await MessageLog(app[DB]).for_user("local")
    assert [(r.role, r.text) for r in rows] == [("user", "Hallo"), ("assistant", "Erste Antwort.")]
