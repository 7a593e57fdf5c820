"""What a person waits for: the time from sending a message to Nova's delivered reply, against
a model server that answers as a real one would (issue 36).

    .venv/bin/python bench/reply.py [--turns 6] [--slots 1] [--scale 1.0] [--speed 4090|3080|all]
                                    [--task-model 4]

The real app runs in this process (embedded Redis, SQLite, runtime, pipelines), as in
bench/turn.py, against `SimulatedServer`: an OpenAI-dialect server (llama.cpp's, with its
`/props`) that answers each call after the time a real one would take, computed from token
counts (tokens ≈ characters / 3.5):

    per-call overhead + prompt tokens not in the slot's cache / prefill rate
                      + output tokens / generation rate

- **slots**: `--slots` requests are served at once; more wait in a queue (FIFO). `/props`
  says `total_slots`, as llama.cpp does, and the app learns them there (`app.llm.slots`):
  it is not told them by a setting.
- **per-slot prefix cache**: each slot keeps its previous prompt; the tokens a new prompt
  shares with it from the start are not prefilled again (llama.cpp `cache_prompt`). A
  request goes to the idle slot whose cached prompt shares the longest prefix with it.
- **output**: the reply's text is a realistic sentence (~60 tokens); a structured answer's
  *content* is the schema's minimal instance (the neutral outcome, so every turn takes the
  ordinary path), but its *tokens* are counted from a realistically filled instance (every
  field present, strings a few words, lists two entries), since that is what a model writes.

Reference speeds (published llama.cpp figures): RTX 4090, 8B Q6: prefill 4 700 tokens/s,
generation 93 tokens/s; RTX 3080, 8B Q4_K_M: 3 800 / 112. Per-call overhead: 30 ms.

A client sends ordinary sentences one at a time and waits for each reply on the WebSocket.
Printed per turn: POST → delivery (s), the model calls before and after delivery (by their
purposes), prompt tokens prefilled and served from the cache, output tokens, and the ratio of
the turn to its own reply call alone (the responder's prompt, uncached, and its output).
Calls after delivery (the saliences, issue 36) still hold the server's slot for a while: the
client waits for the app to be idle before the next message, so a person who answers within
that time (about 0.8 s at these speeds) would wait for them too; the per-call line shows it.
Not measured here yet: the real llama.cpp peer of `make test-peer` (its `timings`).
`--scale` runs the simulation faster than real time (0.2: five times faster); the figures
are given back in the simulated seconds. `--task-model N` adds a task model (`llm_task_model`,
issue 36 item 4) N times faster (prefill and generation; the same per-call overhead) on a
simulated server of its own (its own slots and prefix cache): the structured calls go there,
the reply stays on the main one (goal: ratio ≤ 1.3 with N = 4).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import msgspec  # noqa: E402
from aiohttp import web  # noqa: E402
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from app.api.app_keys import RUNTIME  # noqa: E402
from app.core.settings import defaults  # noqa: E402
from app.llm.schema import WRITTEN_CHARS_PER_TOKEN, filled_instance  # noqa: E402
from app.wiring.server import create_app  # noqa: E402
from tests.fakemodel import PURPOSE_HEADER, PURPOSE_SETTING, minimal_instance  # noqa: E402

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHARS_PER_TOKEN = WRITTEN_CHARS_PER_TOKEN  # the product fits its reserves by the same rule
REPLY_TEXT = (
    "Oh, das klingt nach einem vollen Tag! Ich freue mich, dass du mir davon erzählst. "
    "Was hat dich heute am meisten beschäftigt, und wie geht es dir jetzt damit?"
)
SENTENCES = (
    "Heute war ein langer Tag bei der Arbeit, ich bin ziemlich müde.",
    "Ich habe am Wochenende einen schönen Spaziergang am See gemacht.",
    "Meine Schwester kommt nächste Woche zu Besuch, darauf freue ich mich.",
    "Weißt du, ich lese gerade ein spannendes Buch über Island.",
    "Das Wetter ist heute wirklich grau und regnerisch.",
    "Ich überlege, ob ich wieder mit dem Klavierspielen anfangen soll.",
)


@dataclass(frozen=True)
class Speed:
    name: str
    prefill: float  # tokens/s
    generate: float  # tokens/s
    overhead: float = 0.030  # s per call


SPEEDS = {
    "4090": Speed("RTX 4090, 8B Q6", 4700, 93),
    "3080": Speed("RTX 3080, 8B Q4_K_M", 3800, 112),
}


def tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass
class Call:
    purpose: str
    arrived: float  # simulated seconds since the bench began (scaled clock)
    ended: float = 0.0
    prompt: int = 0
    cached: int = 0
    output: int = 0
    alone: float = 0.0  # its time with an empty cache and no queue


@dataclass
class Slot:
    prompt: str = ""
    busy: bool = False


@dataclass
class SimulatedServer:
    speed: Speed
    slots: int = 1
    scale: float = 1.0
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._slots = [Slot() for _ in range(self.slots)]
        self._free = asyncio.Condition()
        self._server: TestServer | None = None
        self.url = ""
        self.started = time.monotonic()

    def now(self) -> float:
        return (time.monotonic() - self.started) / self.scale

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/props", self._props)
        return app

    async def start(self) -> SimulatedServer:
        self._server = TestServer(self.app(), host="127.0.0.1")
        await self._server.start_server()
        self.url = str(self._server.make_url("")).rstrip("/")
        return self

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"object": "list", "data": [{"id": "sim", "object": "model", "context_length": 8192}]}
        )

    async def _props(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"total_slots": self.slots, "default_generation_settings": {"n_ctx": 8192}}
        )

    async def _slot(self, prompt: str) -> Slot:
        async with self._free:
            await self._free.wait_for(lambda: any(not s.busy for s in self._slots))
            idle = [s for s in self._slots if not s.busy]
            slot = max(idle, key=lambda s: shared_prefix(s.prompt, prompt))
            slot.busy = True
            return slot

    async def _release(self, slot: Slot) -> None:
        async with self._free:
            slot.busy = False
            self._free.notify_all()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await request.read())
        call = Call(request.headers.get(PURPOSE_HEADER, ""), self.now())
        self.calls.append(call)
        prompt = "".join(f"<{m['role']}>{m['content']}" for m in body["messages"])
        schema = _schema(body)
        if schema is None:
            text, written = REPLY_TEXT, REPLY_TEXT
        else:
            text = msgspec.json.encode(minimal_instance(schema)).decode()
            written = msgspec.json.encode(filled_instance(schema)).decode()
        call.prompt, call.output = tokens(len(prompt)), tokens(len(written))
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens > 0:
            call.output = min(call.output, max_tokens)
        slot = await self._slot(prompt)
        try:
            call.cached = min(tokens(shared_prefix(slot.prompt, prompt)), call.prompt)
            slot.prompt = prompt
            work = call.output / self.speed.generate
            call.alone = self.speed.overhead + call.prompt / self.speed.prefill + work
            seconds = self.speed.overhead + (call.prompt - call.cached) / self.speed.prefill + work
            await asyncio.sleep(seconds * self.scale)
        finally:
            await self._release(slot)
        call.ended = self.now()
        usage = {
            "prompt_tokens": call.prompt,
            "completion_tokens": call.output,
            "total_tokens": call.prompt + call.output,
        }
        message = {"role": "assistant", "content": text}
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": "sim",
                    "object": "chat.completion",
                    "model": "sim",
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                    "usage": usage,
                    "timings": {"prompt_n": call.prompt - call.cached, "cache_n": call.cached},
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        base = {"id": "sim", "object": "chat.completion.chunk", "model": "sim"}
        for chunk in (
            {"choices": [{"index": 0, "delta": message, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {"choices": [], "usage": usage},
        ):
            await response.write(b"data: " + msgspec.json.encode({**base, **chunk}) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def faster(speed: Speed, factor: float) -> Speed:
    """A model `factor` times faster at prefill and generation (the same per-call overhead)."""
    return Speed(
        f"{speed.name}, task model ×{factor:g}",
        speed.prefill * factor,
        speed.generate * factor,
        speed.overhead,
    )


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    return fmt.get("schema")


def shared_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class TurnFigures:
    seconds: float
    before: list[Call]
    after: list[Call]

    @property
    def calls(self) -> list[Call]:
        return self.before + self.after

    @property
    def reply_alone(self) -> float:
        return next((c.alone for c in self.calls if c.purpose == "responder"), float("nan"))


async def run_speed(
    speed: Speed, turns: int, slots: int, scale: float, task_factor: float | None = None
) -> list[TurnFigures]:
    server = await SimulatedServer(speed, slots, scale).start()
    servers = [server]
    task: dict[str, Any] = {}
    if task_factor is not None:
        task_server = await SimulatedServer(faster(speed, task_factor), slots, scale).start()
        task_server.started = server.started  # one clock for both
        servers.append(task_server)
        task = {"llm_task_model": "sim-task", "llm_task_url": task_server.url}
    figures: list[TurnFigures] = []
    with tempfile.TemporaryDirectory() as tmp:
        overrides: dict[str, Any] = {
            "data_dir": tmp,
            "redis_appendfsync": "no",
            "rate_limit_per_second": 1e6,
            "llm_provider": "openai",
            "llm_url": server.url,
            "llm_model": "sim",
            "llm_context": 8192,
            "model_timeout": 120.0,
            **PURPOSE_SETTING,
            **task,
        }
        app = create_app(defaults(**overrides), local_token=TOKEN)
        async with TestClient(TestServer(app)) as client:
            ws = await client.ws_connect("/api/ws", headers=AUTH)
            for i in range(turns):
                first = [len(s.calls) for s in servers]
                sent = server.now()
                response = await client.post(
                    "/api/characters/nova/messages",
                    json={"text": SENTENCES[i % len(SENTENCES)]},
                    headers=AUTH,
                )
                assert response.status == 202, await response.text()
                while True:
                    kind = (await ws.receive_json(timeout=600))["type"]
                    if kind in ("character_response", "turn_failed"):
                        break
                delivered = server.now()
                assert kind == "character_response", "the turn failed"
                await app[RUNTIME].idle()
                calls = sorted(
                    (c for s, n in zip(servers, first, strict=True) for c in s.calls[n:]),
                    key=lambda c: c.arrived,
                )
                figures.append(
                    TurnFigures(
                        delivered - sent,
                        [c for c in calls if c.ended <= delivered],
                        [c for c in calls if c.ended > delivered],
                    )
                )
            await ws.close()
    for each in servers:
        await each.close()
    return figures


def report(
    speed: Speed, slots: int, figures: list[TurnFigures], task_factor: float | None = None
) -> None:
    task = f", task model {task_factor:g}× faster" if task_factor is not None else ""
    print(
        f"\n{speed.name}: prefill {speed.prefill:.0f} tok/s, generation {speed.generate:.0f} "
        f"tok/s, {speed.overhead * 1000:.0f} ms per call, {slots} slot(s){task}"
    )
    print(
        f"{'turn':>4} {'POST→deliv s':>12} {'reply alone':>11} {'ratio':>6} "
        f"{'before':>6} {'after':>5} {'prefilled':>9} {'cached':>7} {'cache %':>7} "
        f"{'output':>6}  calls before | after delivery"
    )
    for n, t in enumerate(figures, 1):
        prompt = sum(c.prompt for c in t.calls)
        cached = sum(c.cached for c in t.calls)
        print(
            f"{n:>4} {t.seconds:>12.2f} {t.reply_alone:>11.2f} {t.seconds / t.reply_alone:>6.2f} "
            f"{len(t.before):>6} {len(t.after):>5} {prompt - cached:>9} {cached:>7} "
            f"{100 * cached / max(prompt, 1):>6.0f}% {sum(c.output for c in t.calls):>6}  "
            f"{','.join(c.purpose for c in t.before)} | {','.join(c.purpose for c in t.after)}"
        )
    by_purpose: dict[str, list[Call]] = {}
    for t in figures:
        for c in t.calls:
            by_purpose.setdefault(c.purpose, []).append(c)
    print(
        "per call (mean): "
        + "; ".join(
            f"{purpose} {statistics.mean(c.ended - c.arrived for c in calls):.2f} s "
            f"({statistics.mean(c.output for c in calls):.0f} out, "
            f"{statistics.mean(c.prompt - c.cached for c in calls):.0f} prefilled)"
            for purpose, calls in by_purpose.items()
        )
    )
    ratios = [t.seconds / t.reply_alone for t in figures]
    shares = [
        sum(c.cached for c in t.calls) / max(sum(c.prompt for c in t.calls), 1) for t in figures
    ]
    print(
        f"p50: POST→delivery {statistics.median(t.seconds for t in figures):.2f} s, ratio "
        f"{statistics.median(ratios):.2f} (goal ≤ {2.0 if task_factor is None else 1.3}), "
        f"calls before delivery "
        f"{statistics.median(len(t.before) for t in figures):.0f} (goal ≤ 3), prompt tokens "
        f"from the cache {100 * statistics.median(shares):.0f} %"
    )


async def main_async(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING, stream=open("/dev/null", "w"))  # noqa: SIM115
    names = list(SPEEDS) if args.speed == "all" else [args.speed]
    for name in names:
        figures = await run_speed(SPEEDS[name], args.turns, args.slots, args.scale, args.task_model)
        report(SPEEDS[name], args.slots, figures, args.task_model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--slots", type=int, default=1)
    parser.add_argument("--scale", type=float, default=1.0, help="real seconds per simulated")
    parser.add_argument("--speed", choices=(*SPEEDS, "all"), default="all")
    parser.add_argument(
        "--task-model",
        type=float,
        default=None,
        metavar="N",
        help="add a task model N times faster, on a server of its own",
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
