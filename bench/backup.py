"""Backup and restore of a large data dir (issue 15), with the event loop watched meanwhile.

    .venv/bin/python bench/backup.py [--messages 100000] [--entries 1000] [--pairs 100]
                                     [--records 20000]

The data dir: `--messages` rows in the durable message log (two per turn, spread over a year
of calendar days, texts of 60–400 characters) and, in the embedded Redis, what a busy install
holds: per pair a full session (25 turns), state, lists, reminders; `--records` turn records
with their histories and message records (the 7-day window of the runtime).

Every duration is also printed as a ratio to an I/O floor from the same run (copy the
database file, SCAN every key), and with the load average: on a shared machine the seconds
alone say little.

1. backup — the app serves in this process (the real app over a real embedded Redis and
   SQLite); a client process of its own keeps sending `GET /api/characters/nova/lists`
   while `POST /api/backups` takes the backup. Printed: the backup's duration, and the longest
   single event-loop callback (one task step, loop-thread CPU and wall) and the loop lag (how
   late a 1 ms ticker wakes: p50, p99, max) during it; the floor is the same serving without
   a backup, for as long as the backup took. Targets: backup ≤ 5 s, largest stall ≤ 20 ms,
   loop lag ≤ 20 ms (design §10). And the garbage collections meanwhile (bench/loopwatch.py).
2. restore — the app stopped, `novaberg restore DIR --yes` as the CLI runs it (check every
   checksum and record, move the current data into a safety backup — which dumps the
   current Redis —, install the database, load the keys into the embedded Redis).
   Target ≤ 10 s.

Plus `--entries` journal entries (1 000 by default), each with two versions.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from app.api.app_keys import REDIS  # noqa: E402
from app.backup.restore import restore  # noqa: E402
from app.core.settings import defaults  # noqa: E402
from app.memory import keys  # noqa: E402
from app.storage.database import connect  # noqa: E402
from app.storage.migrations import apply_migrations  # noqa: E402
from app.wiring.server import DATABASE_FILE, create_app  # noqa: E402
from bench.loopwatch import watching  # noqa: E402
from bench.percentiles import percentile  # noqa: E402

TOKEN = "bench-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WORDS = ("heute", "war", "ich", "im", "Park", "und", "habe", "Anna", "getroffen", "Kaffee",
         "morgen", "Arbeit", "schön", "müde", "Regen", "Sonne", "Buch", "gelesen")


def text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 60)))


def fill_database(path: Path, messages: int, entries: int, rng: random.Random) -> None:
    conn = connect(path)
    apply_migrations(conn)
    start = time.time() - 365 * 86400
    rows = []
    for n in range(messages):
        created = start + n * (365 * 86400 / messages)
        day = time.strftime("%Y-%m-%d", time.localtime(created))
        turn = f"turn-{n // 2}"
        rows.append((f"{turn}:{n % 2}", "local", "nova", turn, json.dumps([f"msg-{n // 2}"]),
                     "user" if n % 2 == 0 else "assistant", "" if n % 2 == 0 else "antwort",
                     text(rng), created, day))
    with conn:
        conn.executemany("INSERT INTO messages (entry_key, user_id, character_id, turn_id, "
                         "message_ids, role, origin, text, created, calendar_date) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        fill_journal(conn, entries, rng)
    conn.close()


def fill_journal(conn: sqlite3.Connection, entries: int, rng: random.Random) -> None:
    """`entries` journal entries on as many days, each with a draft version and an edit."""
    now = time.time()
    conn.execute("INSERT INTO journal_spaces (space_id, user_id, created_at) "
                 "VALUES ('space-local', 'local', ?)", (now,))
    for n in range(entries):
        date = time.strftime("%Y-%m-%d", time.localtime(now - n * 86400))
        conn.execute("INSERT INTO journal_days (day_id, space_id, calendar_date, created_at) "
                     "VALUES (?, 'space-local', ?, ?)", (f"day-{n}", date, now))
        conn.execute("INSERT INTO journal_entries (entry_id, journal_day_id, current_version_id, "
                     "created_at) VALUES (?, ?, ?, ?)", (f"entry-{n}", f"day-{n}", f"ver-{n}-2",
                                                         now))
        for seq in (1, 2):
            conn.execute("INSERT INTO journal_entry_versions (version_id, entry_id, seq, origin, "
                         "text, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                         (f"ver-{n}-{seq}", f"entry-{n}", seq, "draft" if seq == 1 else "edit",
                          " ".join(text(rng) for _ in range(8)), now))


async def fill_redis(redis, pairs: int, records: int, rng: random.Random) -> None:
    pipe = redis.pipeline(transaction=False)
    for p in range(pairs):
        user = "local" if p == 0 else f"user{p}"
        turns = [json.dumps({"turn_id": f"t{p}-{i}", "rolle": "user", "inhalt": text(rng),
                             "zeit": time.time()}) for i in range(25)]
        pipe.rpush(keys.session_turns(user, "nova"), *turns)
        pipe.expire(keys.session_turns(user, "nova"), 14400)
        pipe.set(keys.session_summary(user, "nova"), text(rng), ex=14400)
        pipe.hset(keys.nova_state(user, "nova"), mapping={"emotion": "neutral", "arousal": "0.5"})
        pipe.hset(keys.lists(user, "nova"), mapping={
            f"liste{i}": json.dumps({"name": f"Liste {i}", "items": [text(rng)[:30]] * 5})
            for i in range(3)})
        pipe.hset(keys.reminders(user, "nova"), mapping={
            f"r{i}": json.dumps({"id": f"r{i}", "text": text(rng)[:40]}) for i in range(3)})
    for n in range(records):
        pipe.hset(keys.turn_record(f"turn-{n}"), mapping={
            "state": "delivered", "user_id": "local", "character_id": "nova",
            "message_ids": json.dumps([f"msg-{n}"]), "attempts": "1"})
        pipe.expire(keys.turn_record(f"turn-{n}"), 7 * 86400)
        pipe.rpush(keys.turn_history(f"turn-{n}"), *[json.dumps({"state": s, "at": time.time()})
                                                     for s in ("queued", "path1", "path2",
                                                               "delivered")])
        pipe.expire(keys.turn_history(f"turn-{n}"), 7 * 86400)
        pipe.hset(keys.message_record(f"msg-{n}"), mapping={
            "text": text(rng), "received_at": str(time.time()), "user_id": "local",
            "character_id": "nova", "turn_id": f"turn-{n}"})
        pipe.expire(keys.message_record(f"msg-{n}"), 7 * 86400)
        if n % 2000 == 0:
            await pipe.execute()
    await pipe.execute()


# The serving load: a client process of its own (its work and its garbage are not the
# server's), one keep-alive request after another until its stdin closes; prints the
# latencies in ms as one JSON list.
_CLIENT = r"""
import http.client, json, sys, threading, time
port, token = int(sys.argv[1]), sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
latencies = []
while not stop.is_set():
    started = time.perf_counter()
    conn.request("GET", "/api/characters/nova/lists", headers={"Authorization": "Bearer " + token})
    response = conn.getresponse()
    assert response.status == 200, response.status
    response.read()
    latencies.append((time.perf_counter() - started) * 1000)
print(json.dumps(latencies))
"""


async def measure(client: TestClient, seconds: float | None, action=None):
    """The loop watched while a client process keeps requesting and `action` (or a sleep of
    `seconds`) runs: (duration, watch, request latencies in ms, the action's result)."""
    load = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CLIENT, str(client.port), TOKEN,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    await asyncio.sleep(0.3)  # the client is up and requesting
    async with watching() as watch:
        started = time.perf_counter()
        result = None
        if action is not None:
            result = await action()
        else:
            await asyncio.sleep(seconds or 1.0)
        took = time.perf_counter() - started
    assert load.stdin is not None
    load.stdin.close()
    out, _ = await load.communicate()
    assert load.returncode == 0, load.returncode
    return took, watch, json.loads(out), result


def io_floor(data: Path, settings) -> float:
    """What any backup must at least do: copy the database file and visit every key."""
    import shutil

    from app.backup import redis_snapshot
    from app.backup.access import redis_dir
    from app.storage.embedded_redis import EmbeddedRedis

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(data / DATABASE_FILE, Path(tmp) / DATABASE_FILE)
    client = redis_snapshot.connect(EmbeddedRedis(redis_dir(data)).url)
    try:
        sum(1 for _ in client.scan_iter(count=1000))
    finally:
        client.close()
    return time.perf_counter() - started


async def main(args: argparse.Namespace) -> None:
    logging.disable(logging.INFO)
    rng = random.Random(7)
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        fill_database(data / DATABASE_FILE, args.messages, args.entries, rng)
        settings = defaults(data_dir=str(data), llm_provider="offline", backup_daily=False,
                            redis_appendfsync="no")
        app = create_app(settings, local_token=TOKEN)
        async with TestClient(TestServer(app)) as client:
            await fill_redis(app[REDIS], args.pairs, args.records, rng)
            key_count = await app[REDIS].dbsize()
            size_mb = (data / DATABASE_FILE).stat().st_size / 1e6
            print(f"data dir: {args.messages} messages, {args.entries} journal entries "
                  f"({size_mb:.0f} MB SQLite), "
                  f"{key_count} Redis keys ({args.pairs} pairs, {args.records} turn records)")


            async def take():
                async with client.post("/api/backups", headers=AUTH) as response:
                    assert response.status == 201, await response.text()
                    return await response.json()

            took, watch, lat, made = await measure(client, None, take)
            # The floor: the same serving for as long, right after (a rare delay of a loaded
            # machine shows in a long window more often than in a short one).
            _, floor, floor_lat, _ = await measure(client, took)
            floor_s = await asyncio.to_thread(io_floor, data, settings)
            started = time.perf_counter()
            await take()  # the same without requests competing for the CPU
            took_alone = time.perf_counter() - started
        print(f"load average now: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"1. backup: {took:.2f} s  (target ≤ 5 s: {'met' if took <= 5 else 'NOT met'}); "
              f"{made['bytes'] / 1e6:.0f} MB, {made['counts']['redis_keys']} keys, "
              f"{made['counts']['entries']} entries")
        print(f"   the same backup with the app idle: {took_alone:.2f} s "
              f"(target: {'met' if took_alone <= 5 else 'NOT met'})")
        print(f"   floor (copy the database file + SCAN every key, same run): {floor_s:.2f} s "
              f"→ ratio {took / floor_s:.1f} serving, {took_alone / floor_s:.1f} idle")
        print(f"   during the backup: {watch.stall_line()}")
        print(f"   floor (serving, no backup): {floor.stall_line()}")
        print(f"   {watch.lag_line('during the backup')}")
        print(f"   floor: {floor.lag_line('serving, no backup')}")
        print(f"   during the backup: {watch.collections.line()}")
        print(f"   floor: {floor.collections.line()}")
        print(f"   requests served meanwhile: {len(lat)}, p50 {percentile(lat, .5):.1f} ms, "
              f"p99 {percentile(lat, .99):.1f} ms (floor p50 {percentile(floor_lat, .5):.1f}, "
              f"p99 {percentile(floor_lat, .99):.1f})")

        started = time.perf_counter()
        restore(settings, Path(made["path"]), confirm=lambda question: True,
                say=lambda line: None)
        took = time.perf_counter() - started
        print(f"2. restore: {took:.2f} s  (target ≤ 10 s: {'met' if took <= 10 else 'NOT met'}; "
              "check + safety backup of the current data + install + Redis load); "
              f"ratio to the floor {took / floor_s:.1f}")
        conn = sqlite3.connect(data / DATABASE_FILE)
        restored = conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        conn.close()
        assert restored == args.messages, restored


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--records", type=int, default=20_000)
    asyncio.run(main(parser.parse_args()))
