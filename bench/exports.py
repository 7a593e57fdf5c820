"""Exports and an import of a large install, with the event loop and the memory watched
(issue 24, item 1).

    .venv/bin/python bench/exports.py [--messages 200000] [--entries 1000] [--memories 20000]
                                      [--import-mb 50]

The data dir: `--messages` rows in the message log (as bench/backup.py makes them), `--entries`
journal entries with two versions each, `--memories` long-term memories. The app serves in
this process over a real embedded Redis and SQLite; the downloads and the upload run in a
thread of their own (a blocking HTTP client), so the event loop carries only the server.
Meanwhile a second thread asks `GET /api/health` one request after another.

For each export (chat, journal, memories; JSON and Markdown) and for `POST /api/imports` of
a chat export of `--import-mb` megabytes:

- the stall — the longest single event-loop callback (loop-thread CPU) — and the loop lag —
  how late a 1 ms ticker wakes, p50/p99/max (bench/loopwatch.py);
- `/api/health` latency meanwhile (p50, max);
- the process's peak RSS growth: the peak (VmHWM, reset before through
  /proc/self/clear_refs) less the RSS before.

Targets (design §10, issue 24): stall and loop lag ≤ 20 ms, peak RSS growth ≤ 50 MB, for the
200 000-message chat export above all. Printed with the load average: on a shared machine
the lag also holds the time the OS gave to other processes.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import logging
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from app.core.settings import defaults  # noqa: E402
from app.memory.long_term import insert_memory  # noqa: E402
from app.storage.database import connect  # noqa: E402
from app.wiring.server import DATABASE_FILE, create_app  # noqa: E402
from bench.backup import fill_database, text  # noqa: E402
from bench.loopwatch import LAG_TARGET_MS, STALL_TARGET_MS, watching  # noqa: E402
from bench.percentiles import percentile  # noqa: E402

TOKEN = "bench-token-0123456789"
RSS_TARGET_MB = 50.0


def fill_memories(path: Path, count: int, rng: random.Random) -> None:
    conn = connect(path)
    start = time.time() - 365 * 86400
    with conn:
        for n in range(count):
            created = start + n * (365 * 86400 / count)
            insert_memory(conn, {
                "memory_id": f"mem-{n}", "user_id": "local", "character_id": "nova",
                "text": text(rng), "kind": "fact", "importance": 0.5, "created_at": created,
                "refreshed_at": created, "last_used_at": None, "reflected_at": None,
                "source_message_ids": json.dumps([f"msg-{n}"]), "superseded_by": None})
    conn.close()


def memory_kb(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(field_name)


def reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, int]:
    """One request from a thread: (status, bytes of the answer read and dropped)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    try:
        conn.request(method, path, body=body, headers={"Authorization": f"Bearer {TOKEN}"})
        response = conn.getresponse()
        size = 0
        while block := response.read(1 << 16):
            size += len(block)
        return response.status, size
    finally:
        conn.close()


def health_loop(port: int, stop: threading.Event, into: list[float]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        started = time.perf_counter()
        conn.request("GET", "/api/health")
        conn.getresponse().read()
        into.append((time.perf_counter() - started) * 1000)
        time.sleep(0.002)
    conn.close()


async def measure(port: int, method: str, path: str, body: bytes | None = None):
    stop = threading.Event()
    health: list[float] = []
    poller = threading.Thread(target=health_loop, args=(port, stop, health), daemon=True)
    poller.start()
    await asyncio.sleep(0.2)
    rss_before = memory_kb("VmRSS")
    resettable = reset_peak()
    started = time.perf_counter()
    async with watching() as watch:
        status, size = await asyncio.to_thread(request, port, method, path, body)
    took = time.perf_counter() - started
    growth = (memory_kb("VmHWM") - rss_before) / 1024 if resettable else float("nan")
    stop.set()
    await asyncio.to_thread(poller.join)
    assert status == 200, (status, path)
    return took, size, watch, growth, health


def report(name: str, took: float, size: int, watch, growth: float,
           health: list[float]) -> None:
    print(f"{name}: {took:.2f} s, {size / 1e6:.1f} MB")
    print(f"   {watch.stall_line()}")
    print(f"   {watch.lag_line('meanwhile')}")
    rss_met = "met" if growth <= RSS_TARGET_MB else "NOT met"
    print(f"   peak RSS growth {growth:.1f} MB (target ≤ {RSS_TARGET_MB:.0f} MB: {rss_met}); "
          f"/api/health meanwhile: {len(health)} answers, p50 {percentile(health, .5):.1f} ms, "
          f"max {max(health, default=float('nan')):.1f} ms")


def import_document(megabytes: int, rng: random.Random) -> bytes:
    """A chat export of about `megabytes` MB whose messages this install does not have."""
    messages, size, n = [], 0, 0
    start = time.time() - 30 * 86400
    while size < megabytes * 1_000_000:
        message = {"entry_key": f"imported-{n}", "turn_id": f"it-{n // 2}",
                   "message_ids": [f"im-{n // 2}"], "character_id": "nova",
                   "role": "user" if n % 2 == 0 else "assistant", "origin": "", "text": text(rng),
                   "created": start + n, "calendar_date": time.strftime(
                       "%Y-%m-%d", time.localtime(start + n))}
        messages.append(message)
        size += len(message["text"]) + 220
        n += 1
    return json.dumps({"kind": "novaberg.chat", "format_version": 1, "messages": messages},
                      ensure_ascii=False, indent=1).encode()


async def main(args: argparse.Namespace) -> None:
    logging.disable(logging.INFO)
    rng = random.Random(11)
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir(mode=0o700)
        fill_database(data / DATABASE_FILE, args.messages, args.entries, rng)
        fill_memories(data / DATABASE_FILE, args.memories, rng)
        upload = import_document(args.import_mb, rng)
        settings = defaults(data_dir=str(data), llm_provider="offline", backup_daily=False,
                            redis_appendfsync="no", import_max_bytes=2 * len(upload))
        app = create_app(settings, local_token=TOKEN)
        async with TestClient(TestServer(app)) as client:
            port = client.port
            size_mb = (data / DATABASE_FILE).stat().st_size / 1e6
            print(f"data dir: {args.messages} messages, {args.entries} journal entries, "
                  f"{args.memories} memories ({size_mb:.0f} MB SQLite)")
            print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
            async with watching() as idle:
                await asyncio.sleep(1.0)
            print(f"floor: {idle.lag_line('idle')}")
            results = {}
            for kind in ("chat", "journal", "memories"):
                for fmt in ("json", "md"):
                    name = f"export {kind} {fmt}"
                    results[name] = await measure(port, "GET",
                                                  f"/api/exports/{kind}?format={fmt}")
                    report(name, *results[name])
            name = f"import of {len(upload) / 1e6:.0f} MB (chat JSON)"
            results[name] = await measure(port, "POST", "/api/imports", upload)
            report(name, *results[name])
        headline = results["export chat json"]
        print(f"load average now: {os.getloadavg()[0]:.1f}")
        print(f"headline, the {args.messages}-message chat export (JSON): stall "
              f"{headline[2].stall_ms:.1f} ms (≤ {STALL_TARGET_MS:.0f}), loop lag max "
              f"{headline[2].lag_max_ms:.1f} ms (≤ {LAG_TARGET_MS:.0f}), peak RSS growth "
              f"{headline[3]:.1f} MB (≤ {RSS_TARGET_MB:.0f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--entries", type=int, default=1_000)
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--import-mb", type=int, default=50)
    asyncio.run(main(parser.parse_args()))
