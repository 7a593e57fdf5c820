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
3. Long-term memory (SQLite, FTS5 trigram) with 10 000 memories of one pair and as many of
   another pair, written after them (the worst case for a search that walked the whole
   index): `relevant` (top 5 by IDF × importance × recency) + the whole-memory budget for a
   user block. Floor: one primary-key read of a memory on the same database. Target: p50 ≤
   5 ms.
4. Consolidation overhead without model time: the Pixie worker's whole handling of one
   trigger (candidates, the offline model's call, checks, one write transaction, the
   queue's acknowledgement) minus the time inside the model call, with its two SQLite steps
   on lines of their own. Floor: one one-row SQLite write transaction (the writer syncs to
   disk, `synchronous=FULL`). Then the same with `synchronous=OFF`: the overhead without
   fsync. Target: p50 ≤ 5 ms.
5. Turn overhead (everything but model time, as bench/turn.py measures it) of chat turns
   with 0 and with 10 000 memories in the pair: two apps side by side against the test
   suite's fake model server answering every call after `--latency` seconds (default 0.02),
   their turns interleaved (A B, B A, …) so the machine's load falls on both alike.
   Printed: each app's p50/p99 and the median of the per-pair differences with its
   distribution-free 95 % interval. Target: the interval within ±1 ms (`--turns` sets how
   many pairs; a loaded machine needs several hundred).

Over 400 lines on purpose: one script, five measurements that share their timing and
printing helpers, their seeding and one command line; split, each part would carry a copy.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
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

from app.core.settings import defaults  # noqa: E402
from app.memory.render import build_history  # noqa: E402
from app.memory.session import SessionMemory  # noqa: E402
from app.memory.turns import Turn  # noqa: E402
from app.storage.embedded_redis import EmbeddedRedis  # noqa: E402
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
    """Bulk rows through the one writer, as the app adds them (`insert_memory`: the pair's
    next row id; the FTS triggers index them)."""
    import json
    import uuid

    from app.memory.long_term import insert_memory

    def write(conn: Any) -> None:
        for i in range(count):
            at = now - (i % 400) * 86400.0
            insert_memory(conn, {
                "memory_id": uuid.uuid4().hex, "user_id": user_id, "character_id": "nova",
                "text": memory_text(i), "kind": "person", "importance": 0.3 + (i % 7) / 10,
                "created_at": at, "refreshed_at": at, "source_message_ids": json.dumps([f"m{i}"])})

    await db.execute_write_fn(write)


async def bench_long_term(iterations: int) -> None:
    from app.core.clock import zone_named
    from app.memory.long_term import LongTermMemory, within_budget
    from app.memory.pixie_queue import PixieQueue, new_trigger
    from app.consolidation.worker import PixieWorker
    from app.runtime.slots import LocalSlots
    from app.storage.database import Database
    from tests.pipeline_support import node_context
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
        logging.getLogger("app.consolidation").setLevel(logging.WARNING)
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
                store = worker.long_term
                parts: dict[str, list[float]] = {"candidates": [], "apply": []}
                for name in parts:  # the worker's two SQLite steps, timed where it calls them
                    setattr(store, name, timed(getattr(store, name), parts[name]))

                async def consolidate_all(sync: str, first: int) -> list[float]:
                    await ctx.services.db.execute_write_fn(
                        lambda conn: conn.execute(f"PRAGMA synchronous={sync}"))
                    overheads = []
                    for index in range(first, first + min(iterations, 300)):
                        await queue.push(new_trigger(
                            "u", "nova", turn_id=f"t{index}", message_ids=[f"m{index}"],
                            text=f"Meine Kollegin Ida{index} wohnt in Jena.", segments=[],
                            importance=0.8))
                        ctx.calls.clear()
                        raw = await queue.take()
                        started = time.perf_counter()
                        await worker.process(queue, raw)
                        overheads.append(
                            (time.perf_counter() - started - ctx.model_seconds) * 1e6)
                    return overheads

                overheads = await consolidate_all("FULL", 0)
                steps = {name: list(samples) for name, samples in parts.items()}
                unsynced = await consolidate_all("OFF", 10_000)
                await ctx.services.db.execute_write_fn(
                    lambda conn: conn.execute("PRAGMA synchronous=FULL"))
        finally:
            await client.aclose()
            server.stop()
    p50 = percentiles(overheads)[0]
    write_p50 = percentiles(write_floor)[0]
    print(line("floor: one one-row write (fsync)", write_floor))
    print(line("consolidation overhead (no model)", overheads, write_p50)
          + f"  | target p50 ≤ 5000 µs: {'ok' if p50 <= 5000 else 'MISSED'}")
    print(line("  of it: candidates (one read)", steps["candidates"], write_p50))
    print(line("  of it: apply (one write, fsync)", steps["apply"], write_p50))
    print(line("the same without fsync (sync OFF)", unsynced, write_p50)
          + f"  | {'ok' if percentiles(unsynced)[0] <= 5000 else 'MISSED'}")


def timed(function: Callable[..., Awaitable[Any]],
          samples: list[float]) -> Callable[..., Awaitable[Any]]:
    """`function`, noting each call's time (µs) in `samples`."""
    async def call(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await function(*args, **kwargs)
        finally:
            samples.append((time.perf_counter() - started) * 1e6)

    return call


def median_ci(values: list[float], z: float = 1.96) -> tuple[float, float, float]:
    """The median of `values` and its distribution-free 95 % confidence interval (the order
    statistics the binomial(n, ½) distribution puts around it)."""
    ordered = sorted(values)
    n = len(ordered)
    k = max(0, int((n - z * math.sqrt(n)) / 2))
    return statistics.median(ordered), ordered[k], ordered[min(n - 1, n - 1 - k)]


async def bench_turn_overhead(turns: int, latency: float) -> None:
    """bench/turn.py's measurement, chat turns, with 0 and with 10 000 memories: two apps side
    by side, their turns interleaved (A B, B A, …) so that the machine's load falls on both
    alike; the figure is the median of the per-pair differences with its 95 % interval."""
    from aiohttp.test_utils import TestClient, TestServer

    from app.api.app_keys import DB, PATH_RUN_OBSERVER, RUNTIME
    from app.wiring.server import create_app
    from tests.fakemodel import FakeModel, Reply, minimal_instance
    sys.path.insert(0, str(ROOT / "bench"))
    from turn import AUTH, TOKEN, PathRuns  # noqa: PLC0415 - a sibling script

    logging.basicConfig(level=logging.WARNING, stream=open("/dev/null", "w"))  # noqa: SIM115
    collector = PathRuns()
    fake = await FakeModel().start()
    fake.default = lambda request: Reply(
        minimal_instance(request.schema) if request.schema else "Schön.", delay=latency)
    model = fake.overrides()
    model.pop("model_backoff_seconds", None)
    overhead: dict[int, list[float]] = {0: [], MEMORIES: []}
    with tempfile.TemporaryDirectory() as tmp:
        apps, clients, sockets = {}, {}, {}
        for seeded in overhead:
            data = Path(tmp) / str(seeded)
            data.mkdir()
            apps[seeded] = create_app(defaults(data_dir=str(data), redis_appendfsync="no",
                                               rate_limit_per_second=1e6, **model),
                                      local_token=TOKEN)
            apps[seeded][PATH_RUN_OBSERVER] = collector.add
            clients[seeded] = TestClient(TestServer(apps[seeded]))
            await clients[seeded].start_server()
            if seeded:
                await seed_memories(apps[seeded][DB], "local", seeded, time.time())
            sockets[seeded] = await clients[seeded].ws_connect("/api/ws", headers=AUTH)

        async def one_turn(seeded: int, i: int) -> float:
            text = f"Wie geht es wohl meiner Schwester Jana in Leipzig? ({i})"
            response = await clients[seeded].post("/api/characters/nova/messages",
                                                  json={"text": text}, headers=AUTH)
            assert response.status == 202
            while True:
                event = await sockets[seeded].receive_json(timeout=30)
                if event["type"] in ("character_response", "turn_failed"):
                    break
            await apps[seeded][RUNTIME].idle()
            return sum(run.overhead_ms for run in collector.runs
                       if run.turn_id == event.get("turn_id"))

        try:
            for i in range(turns):
                order = (0, MEMORIES) if i % 2 == 0 else (MEMORIES, 0)
                for seeded in order:
                    overhead[seeded].append(await one_turn(seeded, i))
        finally:
            for seeded in overhead:
                await sockets[seeded].close()
                await clients[seeded].close()
            await fake.close()
    warm = slice(min(5, turns // 10), None)  # the first turns load code and caches
    without, with_memories = overhead[0][warm], overhead[MEMORIES][warm]
    print(f"turn overhead (fake model answering after {latency * 1000:.0f} ms, {turns} chat "
          "turns per app, interleaved, everything but model time)")
    for seeded, values in ((0, without), (MEMORIES, with_memories)):
        print(f"  {seeded:>6} memories: p50 {statistics.median(values):7.3f} ms  "
              f"p99 {percentile(values, 0.99):7.3f} ms")
    delta, low, high = median_ci([b - a for a, b in zip(without, with_memories, strict=True)])
    print(f"  difference per pair of turns: median {delta:+.3f} ms, 95 % interval "
          f"[{low:+.3f}, {high:+.3f}] ms over {len(without)} pairs (target within ±1 ms: "
          f"{'ok' if -1.0 <= low and high <= 1.0 else 'not shown'})")


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
