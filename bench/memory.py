"""Session memory: render cost of a full window, and store/retrieve round trips per turn.

    .venv/bin/python bench/memory.py [--iterations 2000] [--turns 100] [--parts …]

1. Render a 25-turn session of 2 KB turns (user turns, replies and impulses) with the
   default window and the 8000-char budget, and with `whole=True` (the summarizer's view).
   Floor, measured in the same run: one f-string speaker line per turn, joined — the least
   any renderer of speaker lines must do (no grouping, labels, window or budget). Printed: p50/p99 and the ratio of the p50s.
2. Against a real embedded Redis: `store` of one 2 KB turn and `retrieve` of the 25-turn
   session. Floor: one PING round trip on the same connection. Printed: p50/p99, the ratio
   to the floor, and the Redis commands per operation (from INFO commandstats: what the
   client sent, and what ran inside the server, Lua scripts included).
3. Long-term memory (SQLite, FTS5 trigram) with 10 000 memories of one pair (and as many of
   other pairs): `relevant` (top 5 by IDF × importance × recency) + the whole-memory budget
   for a user block. Floor: one primary-key read of a memory on the same database. Target:
   p50 ≤ 5 ms.
4. Consolidation overhead without model time: the Pixie worker's whole handling of one
   trigger (take, candidates, the offline model's call, checks, one write transaction,
   acknowledgement) minus the time inside the model call. Floor: one one-row SQLite write
   transaction (the writer syncs to disk, `synchronous=FULL`). Target: p50 ≤ 5 ms.
5. Turn overhead (everything but model time, as bench/turn.py measures it) of chat turns
   with 0 and with 10 000 memories in the pair, against the test suite's fake model server
   answering every call after `--latency` seconds (default 0.02: a fast local model; the
   memory search runs beside the router's call, so a model that answers at all hides it).
   Target: the difference of the p50s ≤ 1 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import redis.asyncio as aioredis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.memory.render import build_history  # noqa: E402
from app.memory.session import SessionMemory  # noqa: E402
from app.memory.turns import Turn  # noqa: E402
from app.redis_server import EmbeddedRedis  # noqa: E402
from app.settings import defaults  # noqa: E402
from bench.percentiles import p50_p99, percentile  # noqa: E402

TURN_CHARS = 2000
SESSION_TURNS = 25
CLIENT_COMMANDS = {"evalsha", "eval", "multi", "exec", "lrange", "get", "llen", "ping"}


def session_turns() -> list[Turn]:
    """25 turns of 2 KB: exchanges of user + reply, an impulse every fifth turn."""
    turns = []
    for index in range(SESSION_TURNS):
        body = (f"Beitrag {index}: " + "Wort " * TURN_CHARS)[:TURN_CHARS]
        if index % 5 == 4:
            turns.append(Turn(f"t{index}", "assistant", body, 1.0e9 + index,
                              occasion="eigener_impuls", emotion="neugier"))
        elif index % 2 == 0:
            turns.append(Turn(f"t{index}", "user", body, 1.0e9 + index, emotion="neutral",
                              message_ids=[f"m{index}"]))
        else:
            turns.append(Turn(f"t{index}", "assistant", body, 1.0e9 + index, occasion="antwort",
                              emotion="freude", message_ids=[f"m{index - 1}"]))
    return turns


def percentiles(samples: list[float]) -> tuple[float, float]:
    return p50_p99(samples)


def time_sync(function: Callable[[], object], iterations: int) -> list[float]:
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


async def time_async(function: Callable[[], Awaitable[object]], iterations: int) -> list[float]:
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        await function()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def line(name: str, samples: list[float], floor_p50: float | None = None) -> str:
    p50, p99 = percentiles(samples)
    ratio = f"  ratio {p50 / floor_p50:6.1f}× floor" if floor_p50 else ""
    return f"  {name:<34} p50 {p50:9.1f} µs  p99 {p99:9.1f} µs{ratio}"


def bench_render(iterations: int) -> None:
    settings = defaults()
    turns = session_turns()
    floor = time_sync(lambda: "\n".join(
        f"[{number}] {turn.role.upper()}: {turn.content}" for number, turn in enumerate(turns)),
        iterations)
    window = time_sync(lambda: build_history(turns, settings), iterations)
    whole = time_sync(lambda: build_history(turns, settings, whole=True), iterations)
    shown = build_history(turns, settings)
    print(f"render, {SESSION_TURNS} turns of {TURN_CHARS} chars "
          f"(window {settings.session_window_exchanges} exchanges, budget "
          f"{settings.session_history_budget_chars}: {shown.groups} groups, "
          f"{len(shown.text)} chars shown, {shown.dropped_by_budget} dropped by budget)")
    floor_p50 = percentiles(floor)[0]
    print(line("floor: one f-string line per turn", floor))
    print(line("render window + budget", window, floor_p50))
    print(line("render whole (summarizer)", whole, floor_p50))


async def command_counts(client: aioredis.Redis,
                         operation: Callable[[], Awaitable[object]]) -> tuple[int, int]:
    """(commands the client sent, commands the server ran) for one call of `operation`."""
    await client.config_resetstat()
    await operation()
    stats = await client.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): value["calls"] for name, value in stats.items()}
    calls.pop("config", None)
    sent = sum(count for name, count in calls.items() if name in CLIENT_COMMANDS)
    return sent, sum(calls.values())


async def bench_redis(iterations: int) -> None:
    settings = defaults()
    turns = session_turns()
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        server = EmbeddedRedis(Path(tmp), appendfsync="everysec")
        server.start()
        client = aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
        try:
            memory = SessionMemory(client, settings)
            for turn in turns:
                await memory.store("bench", "nova", turn)
            one = turns[-1]
            turns_key = "session:bench:nova:turns"

            async def store() -> None:
                await memory.store("bench", "nova", one)
                await client.ltrim(turns_key, 0, SESSION_TURNS - 1)  # keep the session at 25

            async def store_only() -> None:
                await memory.store("bench", "nova", one)

            floor = await time_async(client.ping, iterations)
            stored = await time_async(store_only, iterations)
            await client.ltrim(turns_key, 0, SESSION_TURNS - 1)
            retrieved = await time_async(lambda: memory.retrieve("bench", "nova"), iterations)
            store_cmds = await command_counts(client, store_only)
            retrieve_cmds = await command_counts(client, lambda: memory.retrieve("bench", "nova"))
            await store()
        finally:
            await client.aclose()
            server.stop()
    floor_p50 = percentiles(floor)[0]
    print(f"redis (embedded, unix socket, appendfsync everysec), turns of {TURN_CHARS} chars")
    print(line("floor: PING round trip", floor))
    print(line("store one turn", stored, floor_p50)
          + f"  | 1 round trip, {store_cmds[0]} sent / {store_cmds[1]} run")
    print(line(f"retrieve {SESSION_TURNS} turns + summary", retrieved, floor_p50)
          + f"  | 1 round trip, {retrieve_cmds[0]} sent / {retrieve_cmds[1]} run")
    print(f"  per turn (store + one retrieve by the next run): 2 round trips, "
          f"{store_cmds[0] + retrieve_cmds[0]} commands sent")


# --- long-term memory ---------------------------------------------------------------------

MEMORIES = 10_000
PEOPLE = ("Jana", "Tom", "Eva", "Paul", "Mia", "Ben", "Lea", "Finn", "Emma", "Noah", "Ida",
          "Luca", "Marie", "Jonas", "Clara", "Elias")
RELATIONS = ("Schwester", "Bruder", "Kollegin", "Nachbar", "Freundin", "Chef", "Cousine",
             "Onkel", "Tante", "Trainerin")
CITIES = ("Leipzig", "Dresden", "Hamburg", "Köln", "München", "Berlin", "Bremen", "Kassel",
          "Erfurt", "Jena", "Mainz", "Trier")
LIKES = ("Erdbeereis", "Jazz", "Wandern", "Schach", "Tee", "Kaffee", "Radfahren", "Krimis",
         "Kochen", "Gärtnern", "Yoga", "Brettspiele")
BLOCK = "Ich hab gestern mit meiner Schwester telefoniert, sie zieht vielleicht nach Dresden."


def memory_text(index: int) -> str:
    person = PEOPLE[index % len(PEOPLE)]
    relation = RELATIONS[(index // len(PEOPLE)) % len(RELATIONS)]
    city = CITIES[(index // 7) % len(CITIES)]
    like = LIKES[(index // 11) % len(LIKES)]
    return f"Meine {relation} {person} wohnt in {city} und mag {like} (Nummer {index})."


async def seed_memories(db: Any, user_id: str, count: int, now: float) -> None:
    """Bulk rows through the one writer (the FTS triggers index them as the app's do)."""
    import json
    import uuid

    def write(conn: Any) -> None:
        conn.executemany(
            "INSERT INTO memories (memory_id, user_id, character_id, text, kind, importance, "
            "created_at, refreshed_at, source_message_ids) VALUES (?, ?, 'nova', ?, ?, ?, ?, ?, ?)",
            [(uuid.uuid4().hex, user_id, memory_text(i), "person", 0.3 + (i % 7) / 10,
              now - (i % 400) * 86400.0, now - (i % 400) * 86400.0, json.dumps([f"m{i}"]))
             for i in range(count)])

    await db.execute_write_fn(write)


async def bench_long_term(iterations: int) -> None:
    from app.clock import zone_named
    from app.memory.long_term import LongTermMemory, within_budget
    from app.memory.pixie_queue import PixieQueue, new_trigger
    from app.pipeline.pixie.worker import PixieWorker
    from app.runtime.slots import LocalSlots
    from app.storage.database import Database
    from tests.pipeline_support import node_context

    from app.purposes import register_offline_answers
    register_offline_answers()
    settings = defaults(llm_provider="offline")
    zone = zone_named(settings.timezone)
    now = time.time()
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        db = Database(Path(tmp) / "bench.sqlite3")
        await db.open()
        try:
            await seed_memories(db, "bench", MEMORIES, now)
            await seed_memories(db, "other", MEMORIES, now)
            store = LongTermMemory(db)
            one = (await store.list("bench", "nova"))[4711]
            floor = await time_async(lambda: store.get("bench", "nova", one.memory_id),
                                     iterations)

            async def retrieve() -> None:
                ranked = await store.relevant("bench", "nova", BLOCK,
                                              top_k=settings.memory_top_k, now=now)
                within_budget(ranked, zone, settings.memory_budget_chars)

            retrieved = await time_async(retrieve, iterations)
            shown = await store.relevant("bench", "nova", BLOCK, top_k=5, now=now)
        finally:
            await db.close()
        print(f"long-term memory (SQLite FTS5 trigram), {MEMORIES} memories of the pair "
              f"+ {MEMORIES} of another")
        floor_p50 = percentiles(floor)[0]
        print(line("floor: one memory by primary key", floor))
        print(line("retrieve top 5 + budget", retrieved, floor_p50)
              + "  | target p50 ≤ 5000 µs: "
              + ("ok" if percentiles(retrieved)[0] <= 5000 else "MISSED"))
        print(f"  block: {BLOCK!r}\n  top: {shown[0].text!r}")

        redis_dir = Path(tmp) / "redis"
        server = EmbeddedRedis(redis_dir, appendfsync="everysec")
        server.start()
        client = aioredis.Redis(unix_socket_path=str(server.socket_path), decode_responses=True)
        logging.getLogger("app.pipeline.pixie").setLevel(logging.WARNING)
        try:
            async with node_context(settings, client, Path(tmp)) as (ctx, _):
                await seed_memories(ctx.services.db, "u", MEMORIES, now)
                worker = PixieWorker(redis=client, settings=settings, slots=LocalSlots(1, 5.0),
                                     long_term=ctx.services.long_term,
                                     context_for=lambda *_: ctx)
                queue = PixieQueue(client, "u", "nova")

                async def one_write() -> None:
                    await ctx.services.db.execute_write_fn(lambda conn: conn.execute(
                        "UPDATE memories SET last_used_at = ? WHERE id = 1", (time.time(),)))

                write_floor = await time_async(one_write, min(iterations, 300))
                overheads = []
                for index in range(min(iterations, 300)):
                    await queue.push(new_trigger(
                        "u", "nova", turn_id=f"t{index}", message_ids=[f"m{index}"],
                        text=f"Meine Kollegin Ida{index} wohnt in Jena.", segments=[],
                        importance=0.8))
                    ctx.calls.clear()
                    raw = await queue.take()
                    started = time.perf_counter()
                    await worker.process(queue, raw)
                    overheads.append((time.perf_counter() - started - ctx.model_seconds) * 1e6)
        finally:
            await client.aclose()
            server.stop()
    p50 = percentiles(overheads)[0]
    print(line("floor: one one-row write (fsync)", write_floor))
    print(line("consolidation overhead (no model)", overheads, percentiles(write_floor)[0])
          + f"  | target p50 ≤ 5000 µs: {'ok' if p50 <= 5000 else 'MISSED'}")


async def bench_turn_overhead(turns: int, latency: float) -> None:
    """bench/turn.py's measurement, chat turns, with 0 and with 10 000 memories."""
    from aiohttp.test_utils import TestClient, TestServer

    from tests.fakemodel import FakeModel, Reply, minimal_instance

    from app.server import create_app
    from app.typedefs import DB, PIPELINE_HOST, RUNTIME
    sys.path.insert(0, str(ROOT / "bench"))
    from turn import AUTH, TOKEN, PathRuns  # noqa: PLC0415 - a sibling script

    logging.basicConfig(level=logging.WARNING, stream=open("/dev/null", "w"))  # noqa: SIM115
    results = {}
    for seeded in (0, MEMORIES):
        collector = PathRuns()
        fake = await FakeModel().start()
        fake.default = lambda request: Reply(
            minimal_instance(request.schema) if request.schema else "Schön.", delay=latency)
        model = fake.overrides()
        model.pop("model_backoff_seconds", None)
        with tempfile.TemporaryDirectory() as tmp:
            app = create_app(defaults(data_dir=tmp, redis_appendfsync="no",
                                      rate_limit_per_second=1e6, **model),
                             local_token=TOKEN)
            app[PIPELINE_HOST].on_path_run = collector.add
            async with TestClient(TestServer(app)) as client:
                if seeded:
                    await seed_memories(app[DB], "local", seeded, time.time())
                ws = await client.ws_connect("/api/ws", headers=AUTH)
                for i in range(turns):
                    text = f"Wie geht es wohl meiner Schwester Jana in Leipzig? ({i})"
                    response = await client.post("/api/characters/nova/messages",
                                                 json={"text": text}, headers=AUTH)
                    assert response.status == 202
                    while (await ws.receive_json(timeout=30))["type"] not in (
                            "character_response", "turn_failed"):
                        pass
                await app[RUNTIME].idle()
                await ws.close()
        await fake.close()
        per_turn: dict[str, float] = {}
        for record in collector.runs:
            per_turn[record.turn_id] = per_turn.get(record.turn_id, 0.0) + record.overhead_ms
        results[seeded] = sorted(per_turn.values())
    print(f"turn overhead (fake model answering after {latency * 1000:.0f} ms, {turns} chat "
          "turns, everything but model time)")
    for seeded, values in results.items():
        print(f"  {seeded:>6} memories: p50 {statistics.median(values):7.3f} ms  "
              f"p99 {percentile(values, 0.99):7.3f} ms")
    delta = statistics.median(results[MEMORIES]) - statistics.median(results[0])
    print(f"  difference of the p50s: {delta:+.3f} ms (target ≤ 1 ms: "
          f"{'ok' if delta <= 1.0 else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=100, help="chat turns per run of part 5")
    parser.add_argument("--latency", type=float, default=0.02,
                        help="seconds the fake model takes per call in part 5")
    parser.add_argument("--parts", default="session,long_term,turn",
                        help="comma-separated: session (1-2), long_term (3-4), turn (5)")
    args = parser.parse_args()
    # The budget's warning fires on every render of this session; its cost is measured, its
    # text is not wanted here.
    logging.getLogger("app.memory.render").addHandler(logging.NullHandler())
    logging.getLogger("app.memory.render").propagate = False
    parts = set(args.parts.split(","))
    if "session" in parts:
        bench_render(args.iterations)
        asyncio.run(bench_redis(args.iterations))
    if "long_term" in parts:
        asyncio.run(bench_long_term(min(args.iterations, 1000)))
    if "turn" in parts:
        asyncio.run(bench_turn_overhead(args.turns, args.latency))


if __name__ == "__main__":
    main()
