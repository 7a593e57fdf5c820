"""Model calls per turn and orchestration overhead per path, with a zero-latency model.

    .venv/bin/python bench/turn.py [--turns 200] [--model offline|fake]

The real app runs in this process (embedded Redis, SQLite, runtime, pipelines) with a
zero-latency model: the built-in offline provider (default), or the test suite's fake model
server (`tests/fakemodel.py`, OpenAI dialect, neutral answers). A client sends messages one
at a time and waits for each answer on the WebSocket. Three kinds of turns:

- chat:    "Wie war dein Tag?"                      (path 1, path 2 without an action)
- action:  "Setz <item> auf die Einkaufsliste"      (path 2 with router → lists agent)
- two:     "Setz <item> auf die Liste und erinnere mich morgen an <x>"  (planner, 2 agents)

Every completed path run returns its node times and model calls (`app.pipeline.graph.GraphRun`);
the pipeline host hands each to its `on_path_run` observer (`app[PATH_RUN_OBSERVER]`, set before
the app starts), where this script collects them.
Overhead = the path's wall time minus the time spent inside
model calls (`NodeContext.ask`, which includes the gateway). Floor, measured in the same run
on the same Redis: one session `retrieve` + `store` round trip — the least Redis work a path
does. Printed: model calls per path and their purposes, p50/p99 of total, model and
overhead time, the overhead's ratio to the floor, and the target of design §10 (overhead p50 ≤ 10 ms
per turn).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from app.api.app_keys import PATH_RUN_OBSERVER, REDIS, SETTINGS  # noqa: E402
from app.core.settings import defaults  # noqa: E402
from app.memory.session import SessionMemory  # noqa: E402
from app.memory.turns import Turn  # noqa: E402
from app.pipeline.graph import GraphRun  # noqa: E402
from app.wiring.server import create_app  # noqa: E402
from bench.percentiles import percentile  # noqa: E402

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TARGET_OVERHEAD_MS = 10.0

PARALLEL_NOTE = """\
Which model calls could run in parallel, and whether they do:
- path 1: perception → salience. The salience reads the perception (emotion, arousal,
  core), so they are sequential by design. Not parallel.
- path 2: router → planner → agents → responder → thinker → [corrector] → salience.
  Each consumes the previous answer. Two agents of one plan are independent of each other
  but run one after the other (the planner is star-shaped and an agent's question must stop
  the plan before later steps act). The character's salience could start speculatively
  beside the thinker and be dropped on a regeneration. None of this is done: with one local
  GPU (`model_concurrency` = 1, `graph_slots` = 1) parallel calls would only queue at the
  gateway, and a failed speculation would cost a whole extra call.
"""


class PathRuns:
    """Collects the `GraphRun` of every completed path run (`PipelineHost.on_path_run`)."""

    def __init__(self) -> None:
        self.runs: list[GraphRun] = []

    def add(self, run: GraphRun) -> None:
        self.runs.append(run)


async def floor_ms(app: Any, samples: int = 300) -> list[float]:
    memory = SessionMemory(app[REDIS], app[SETTINGS])
    times = []
    for i in range(samples):
        started = time.perf_counter()
        await memory.retrieve("floor", "nova")
        await memory.store("floor", "nova", Turn(turn_id=str(i), role="user", content="x",
                                                 time=time.time()))
        times.append((time.perf_counter() - started) * 1000)
    await memory.reset("floor", "nova")
    return times


async def run(turns: int, model: str) -> None:
    logging.basicConfig(level=logging.WARNING, stream=open("/dev/null", "w"))  # noqa: SIM115
    collector = PathRuns()
    fake = None
    with tempfile.TemporaryDirectory() as tmp:
        # No rate limit (one client sends as fast as it is answered) and no fsync per write
        # (the disk is not what this measures). The session summary runs as in the app
        # (after delivery, outside the path runs), so the session stays as long as in use.
        overrides: dict[str, Any] = {"data_dir": tmp, "redis_appendfsync": "no",
                                     "rate_limit_per_second": 1e6}
        if model == "fake":
            from tests.fakemodel import FakeModel
            fake = await FakeModel().start()
            overrides.update(fake.overrides())
            overrides.pop("model_backoff_seconds", None)
        else:
            overrides["llm_provider"] = "offline"
        app = create_app(defaults(**overrides), local_token=TOKEN)
        app[PATH_RUN_OBSERVER] = collector.add
        async with TestClient(TestServer(app)) as client:
            ws = await client.ws_connect("/api/ws", headers=AUTH)
            kinds = {"chat": lambda i: f"Wie war dein Tag? ({i})",
                     "action": lambda i: f"Setz Ding{i} auf die Einkaufsliste",
                     "two": lambda i: f"Setz Sache{i} auf die Liste und erinnere mich morgen "
                                      f"an Termin{i}"}
            if model == "fake":
                kinds = {"chat": kinds["chat"]}  # neutral answers: no action is ever asked
            marks: dict[str, tuple[int, int]] = {}
            for kind, text in kinds.items():
                first = len(collector.runs)
                for i in range(turns):
                    response = await client.post("/api/characters/nova/messages",
                                                 json={"text": text(i)}, headers=AUTH)
                    assert response.status == 202, await response.text()
                    while (await ws.receive_json(timeout=30))["type"] not in (
                            "character_response", "turn_failed"):
                        pass
                await app_idle(app)
                marks[kind] = (first, len(collector.runs))
            floor = await floor_ms(app)
            await ws.close()
        report(collector.runs, marks, floor, model)
    if fake is not None:
        await fake.close()


async def app_idle(app: Any) -> None:
    from app.api.app_keys import RUNTIME
    await app[RUNTIME].idle()


def report(runs: list[GraphRun], marks: dict[str, tuple[int, int]],
           floor: list[float], model: str) -> None:
    floor_p50 = statistics.median(floor)
    print(f"model: {model} (zero latency); floor (session retrieve + store): "
          f"p50 {floor_p50:.3f} ms  p99 {percentile(floor, 0.99):.3f} ms")
    print(f"{'kind':<7} {'path':<6} {'calls':>5}  {'purposes':<62} {'total p50':>9} "
          f"{'model p50':>9} {'overhead p50':>12} {'p99':>7} {'÷floor':>6}")
    for kind, (start, end) in marks.items():
        by_path: dict[str, list[GraphRun]] = defaultdict(list)
        for record in runs[start:end]:
            by_path[record.path].append(record)
        for path, records in sorted(by_path.items()):
            calls = [len(r.model_calls) for r in records]
            common = statistics.mode(tuple(purpose for purpose, _ in r.model_calls)
                                     for r in records)
            total = [r.total_ms for r in records]
            model_ms = [r.model_ms for r in records]
            overhead = [r.overhead_ms for r in records]
            print(f"{kind:<7} {path:<6} {statistics.mean(calls):>5.2f}  "
                  f"{','.join(common):<62} {statistics.median(total):>9.3f} "
                  f"{statistics.median(model_ms):>9.3f} {statistics.median(overhead):>12.3f} "
                  f"{percentile(overhead, 0.99):>7.3f} {statistics.median(overhead) / floor_p50:>6.1f}")
        per_turn: dict[str, float] = defaultdict(float)
        for record in runs[start:end]:
            per_turn[record.turn_id] += record.overhead_ms
        sums = list(per_turn.values())
        p50 = statistics.median(sums)
        verdict = "ok" if p50 <= TARGET_OVERHEAD_MS else "MISSED"
        print(f"{kind:<7} per turn (all its path runs): overhead p50 {p50:.3f} ms, "
              f"p99 {percentile(sums, 0.99):.3f} ms (target p50 ≤ {TARGET_OVERHEAD_MS} ms: {verdict})")
    print()
    print(PARALLEL_NOTE)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per kind")
    parser.add_argument("--model", choices=("offline", "fake"), default="offline")
    args = parser.parse_args()
    asyncio.run(run(args.turns, args.model))


if __name__ == "__main__":
    main()
