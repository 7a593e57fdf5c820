"""Session memory: render cost of a full window, and store/retrieve round trips per turn.

    .venv/bin/python bench/memory.py [--iterations 2000]

1. Render a 25-turn session of 2 KB turns (user turns, replies and impulses) with the
   default window and the 8000-char budget, and with `whole=True` (the summarizer's view).
   Floor, measured in the same run: one f-string speaker line per turn, joined — the least
   any renderer of speaker lines must do (no grouping, labels, window or budget). Printed: p50/p99 and the ratio of the p50s.
2. Against a real embedded Redis: `store` of one 2 KB turn and `retrieve` of the 25-turn
   session. Floor: one PING round trip on the same connection. Printed: p50/p99, the ratio
   to the floor, and the Redis commands per operation (from INFO commandstats: what the
   client sent, and what ran inside the server, Lua scripts included).
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

import redis.asyncio as aioredis

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.memory.render import build_history  # noqa: E402
from app.memory.session import SessionMemory  # noqa: E402
from app.memory.turns import Turn  # noqa: E402
from app.redis_server import EmbeddedRedis  # noqa: E402
from app.settings import defaults  # noqa: E402

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
                              origin="eigener_impuls", emotion="neugier"))
        elif index % 2 == 0:
            turns.append(Turn(f"t{index}", "user", body, 1.0e9 + index, emotion="neutral",
                              message_ids=[f"m{index}"]))
        else:
            turns.append(Turn(f"t{index}", "assistant", body, 1.0e9 + index, origin="antwort",
                              emotion="freude", message_ids=[f"m{index - 1}"]))
    return turns


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    # The budget's warning fires on every render of this session; its cost is measured, its
    # text is not wanted here.
    logging.getLogger("app.memory.render").addHandler(logging.NullHandler())
    logging.getLogger("app.memory.render").propagate = False
    bench_render(args.iterations)
    asyncio.run(bench_redis(args.iterations))


if __name__ == "__main__":
    main()
