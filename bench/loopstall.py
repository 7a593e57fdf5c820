"""Issue 38 items 2, 3, 7, 10: the event loop while one user reads much — the character
list after an edit (300 characters with lorebooks), the journal's own export (16 000
entries), another user's history page while one user runs 8 parallel two-letter searches
(200 000 messages), and an 8 MiB card import. The real app in this process (aiohttp's test
server, SQLite, embedded Redis), a 1 ms ticker on its loop (`bench.loopwatch`).

    .venv/bin/python bench/loopstall.py [--messages 200000] [--entries 16000]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
from aiohttp.test_utils import TestServer  # noqa: E402

from app.api.app_keys import DB  # noqa: E402
from app.auth.accounts import add_user_sync  # noqa: E402
from app.core import settings as settings_module  # noqa: E402
from app.wiring.server import create_app  # noqa: E402
from bench.loopwatch import watching  # noqa: E402

TOKEN = "bench-loopstall-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def make_settings(data_dir: Path, **overrides: object) -> settings_module.Settings:
    known = {f.name for f in dataclasses.fields(settings_module.Settings)}
    chosen = {k: v for k, v in overrides.items() if k in known}
    return settings_module.defaults(data_dir=str(data_dir), llm_provider="offline", **chosen)


def write_characters(folder: Path, count: int, entries: int) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for n in range(count):
        book = {"entries": [{"keys": [f"ort{n}-{k}"], "content": f"Eintrag {k} " * 20, "id": k}
                            for k in range(entries)]}
        (folder / f"c{n}.card.json").write_text(json.dumps({"character_book": book}))
        (folder / f"c{n}.toml").write_text(
            f'id = "c{n}"\nname = "Figur {n}"\nlanguage = "de"\npersona = "Eine Figur."\n'
            f'card = "c{n}.card.json"\n')


async def fill_journal(db, entries: int) -> None:
    def fill(conn) -> None:
        conn.execute("INSERT INTO journal_spaces (space_id, user_id, created_at) VALUES "
                     "('space_b', 'local', 0)")
        first = dt.date(1990, 1, 1)
        days, rows, versions = [], [], []
        for n in range(entries):
            date = (first + dt.timedelta(days=n)).isoformat()
            days.append((f"day{n}", "space_b", date, 0.0))
            rows.append((f"entry{n}", f"day{n}", f"ver{n}", 0.0))
            versions.append((f"ver{n}", f"entry{n}", 1, "edit",
                             f"Tag {n}: " + "Ein ganz gewöhnlicher Tag im Garten. " * 12, 0.0))
        conn.executemany("INSERT INTO journal_days (day_id, space_id, calendar_date, created_at)"
                         " VALUES (?, ?, ?, ?)", days)
        conn.executemany("INSERT INTO journal_entries (entry_id, journal_day_id, "
                         "current_version_id, created_at) VALUES (?, ?, ?, ?)", rows)
        conn.executemany("INSERT INTO journal_entry_versions (version_id, entry_id, seq, origin, "
                         "text, created_at) VALUES (?, ?, ?, ?, ?, ?)", versions)

    await db.execute_write_fn(fill)


async def fill_messages(db, user: str, count: int) -> None:
    start = time.time() - 365 * 86400

    def fill(conn) -> None:
        rows = [(f"{user}:{n}", user, "nova", f"t{n // 2}", "[]",
                 "user" if n % 2 == 0 else "assistant", "", f"Nachricht {n}: über den Garten "
                 "und das Wetter, ein ganz normaler Satz.", start + n * 60,
                 time.strftime("%Y-%m-%d", time.gmtime(start + n * 60))) for n in range(count)]
        conn.executemany("INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                         "message_ids, role, origin, text, created, calendar_date) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)

    await db.execute_write_fn(fill)


async def drain(response: aiohttp.ClientResponse) -> int:
    size = 0
    async for piece in response.content.iter_chunked(1 << 16):
        size += len(piece)
    return size


async def bench_characters(session, base) -> None:
    async with session.get(f"{base}/api/characters", headers=AUTH) as r:  # read once, warm
        await drain(r)
    async with session.put(f"{base}/api/characters/c7", headers=AUTH, json={
            "name": "Figur 7", "language": "de", "persona": "Eine andere Figur."}) as r:
        assert r.status == 200, await r.text()
    async with watching() as watch:
        started = time.perf_counter()
        async with session.get(f"{base}/api/characters", headers=AUTH) as r:
            await drain(r)
        took = (time.perf_counter() - started) * 1000
    print(f"item 2  GET /api/characters after an edit (300 characters, 40 lore entries each): "
          f"{took:.0f} ms; loop lag max {watch.lag_max_ms:.1f} ms, "
          f"longest callback {watch.stall_ms:.1f} ms")


async def bench_export(session, base, entries: int) -> None:
    async with watching() as watch:
        started = time.perf_counter()
        async with session.get(f"{base}/api/journal/export?format=json", headers=AUTH) as r:
            chunked = r.headers.get("Transfer-Encoding") == "chunked"
            size = await drain(r)
        took = (time.perf_counter() - started) * 1000
    print(f"item 3  GET /api/journal/export ({entries} entries, {size / 1e6:.1f} MB, "
          f"chunked: {chunked}): {took:.0f} ms; loop lag max {watch.lag_max_ms:.1f} ms, "
          f"longest callback {watch.stall_ms:.1f} ms")


async def bench_searches(session, base, anna: str, messages: int, label: str) -> None:
    async def search() -> int:
        async with session.get(f"{base}/api/characters/nova/history/search?q=zq",
                               headers=AUTH) as r:
            await r.read()
            return r.status

    searches = [asyncio.ensure_future(search()) for _ in range(8)]
    await asyncio.sleep(0.05)  # the searches are on their way
    started = time.perf_counter()
    async with session.get(f"{base}/api/characters/nova/history",
                           headers={"Authorization": f"Bearer {anna}"}) as r:
        await r.read()
        assert r.status == 200
    page = (time.perf_counter() - started) * 1000
    statuses = await asyncio.gather(*searches)
    print(f"item 7  another user's history page during 8 two-letter searches over {messages} "
          f"messages ({label}): {page:.0f} ms; searches answered {sorted(statuses)}")


async def bench_import(session, base) -> None:
    entries = [{"keys": [f"ort{n}"], "content": "", "id": n} for n in range(2000)]
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Archiv", "description": "Ein Archivar.", "first_mes": "Hallo.",
        "character_book": {"entries": entries}}}
    for entry in entries:
        entry["content"] = "Wissen " * 590
    raw = json.dumps(card).encode()
    async with session.post(f"{base}/api/characters/import?id=warm", headers=AUTH,
                            data=json.dumps({**card, "data": {**card["data"],
                                             "character_book": None}}).encode()) as r:
        await r.read()  # the first import starts what an import needs (a process, imports)
    async with watching() as watch:
        started = time.perf_counter()
        async with session.post(f"{base}/api/characters/import?id=archiv", headers=AUTH,
                                data=raw) as r:
            await r.read()
            status = r.status
        took = (time.perf_counter() - started) * 1000
    print(f"item 10 POST /api/characters/import ({len(raw) / 1e6:.1f} MB, 2 000 entries): "
          f"{status}, {took:.0f} ms; loop lag max {watch.lag_max_ms:.1f} ms, "
          f"longest callback {watch.stall_ms:.1f} ms")


async def run(data_dir: Path, messages: int, entries: int, scan_rows: int | None) -> None:
    write_characters(data_dir / "characters" / "users" / "local", 300, 40)
    overrides = {"search_scan_rows": scan_rows} if scan_rows else {}
    app = create_app(make_settings(data_dir, **overrides), local_token=TOKEN)
    server = TestServer(app)
    await server.start_server()
    base = str(server.make_url("")).rstrip("/")
    try:
        db = app[DB]
        anna = await db.execute_write_fn(lambda c: add_user_sync(c, "anna", "password123"))
        await fill_journal(db, entries)
        await fill_messages(db, "local", messages)
        await fill_messages(db, "anna", 200)
        async with aiohttp.ClientSession() as session:
            await bench_characters(session, base)
            await bench_export(session, base, entries)
            label = f"search_scan_rows {scan_rows}" if scan_rows else "default settings"
            await bench_searches(session, base, anna, messages, label)
            await bench_import(session, base)
    finally:
        await server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--entries", type=int, default=16_000)
    parser.add_argument("--scan-rows", type=int, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder) / "data"
        data_dir.mkdir(mode=0o700)
        asyncio.run(run(data_dir, args.messages, args.entries, args.scan_rows))



if __name__ == "__main__":
    main()
