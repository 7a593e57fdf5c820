"""What a person waits for: the time from sending a message to Nova's delivered reply, against
a model server that answers as a real one would (issue 36).

    .venv/bin/python bench/reply.py [--turns 6] [--slots 1] [--scale 1.0] [--speed 4090|3080|all]
                                    [--task-model 4]
    .venv/bin/python bench/reply.py --peer [--turns 12]      # `make bench-peer`

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
`--scale` runs the simulation faster than real time (0.2: five times faster); the figures
are given back in the simulated seconds. `--task-model N` adds a task model (`llm_task_model`,
issue 36 item 4) N times faster (prefill and generation; the same per-call overhead) on a
simulated server of its own (its own slots and prefix cache): the structured calls go there,
the reply stays on the main one (goal: ratio ≤ 1.3 with N = 4).

`--peer`: the same turns against the real llama.cpp peer of `make test-peer` instead
(llama-cpp-python's server with the tiny random model of tests/peer, n_ctx 8192; started by
`tests/peer/server.py`, as the peer suite starts it), so the prefix-cache figure is a real
server's (issue 36, goal: ≥ 70 % of a turn's prompt tokens from the cache). That server does
not answer llama.cpp's `timings`; its verbose log says per request how many prompt tokens
matched the one context it keeps ("Llama.generate: N prefix-match hit, remaining M prompt
tokens to eval"), and `PeerProxy` reads that account for each call. It has one context (one
slot, no `/props`) and reuses the previous prompt's prefix whatever the request says
(`cache_prompt` is not a field it knows; `--cache`, its store of older states, gains a point at
most here and is not used). Its tokenizer is ~1 token per character (two for an umlaut), so its
counts are ~3.5 times a real model's; the shares, a ratio of counts, carry over. Printed per
turn: POST → delivery (wall clock on this machine's CPU: it shows the turn runs, not a speed),
the calls before and after delivery, the prompt tokens cached and processed and the cached
share, and each call's cached/prompt tokens; then the p50 share.
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402
import msgspec  # noqa: E402
from aiohttp import web  # noqa: E402
from aiohttp.test_utils import TestClient, TestServer  # noqa: E402

from app.api.app_keys import RUNTIME  # noqa: E402
from app.core.settings import defaults  # noqa: E402
from app.llm.schema import WRITTEN_CHARS_PER_TOKEN, filled_instance  # noqa: E402
from app.wiring.server import create_app  # noqa: E402
from tests.fakemodel import PURPOSE_HEADER, PURPOSE_SETTING, minimal_instance  # noqa: E402
from tests.peer.server import Peer, prompt_account, running  # noqa: E402

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
        text, written = scripted(body)
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
        timings = {"prompt_n": call.prompt - call.cached, "cache_n": call.cached}
        return await answer(request, body, "sim", text, usage, timings)


async def answer(
    request: web.Request,
    body: dict[str, Any],
    model: str,
    text: str,
    usage: dict[str, int],
    timings: dict[str, int] | None = None,
) -> web.StreamResponse:
    """An OpenAI-dialect chat answer of `text`, streamed where the request asked for it."""
    message = {"role": "assistant", "content": text}
    if not body.get("stream"):
        return web.json_response(
            {
                "id": "bench",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": usage,
                **({"timings": timings} if timings is not None else {}),
            }
        )
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    base = {"id": "bench", "object": "chat.completion.chunk", "model": model}
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


def scripted(body: dict[str, Any]) -> tuple[str, str]:
    """The answer's content and what a model would have written for it: the reply sentence,
    or a schema's minimal instance (the neutral outcome: every turn takes the ordinary path)
    and its realistically filled instance."""
    schema = _schema(body)
    if schema is None:
        return REPLY_TEXT, REPLY_TEXT
    return (
        msgspec.json.encode(minimal_instance(schema)).decode(),
        msgspec.json.encode(filled_instance(schema)).decode(),
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
    overrides: dict[str, Any] = {
        "llm_url": server.url,
        "llm_model": "sim",
        "llm_context": 8192,
        **task,
    }
    try:
        return await drive(servers, overrides, turns)
    finally:
        for each in servers:
            await each.close()


@dataclass
class PeerProxy:
    """The real peer (`tests/peer/server.py`) behind a thin proxy that records each call: its
    purpose (the header the app sends with `PURPOSE_SETTING`) and the server's own account of
    its prompt tokens, cached and processed, read from the server's log while the call ran
    (`prompt_account`). Calls go to the peer one at a time, as its one context serves them
    anyway, so each log excerpt is one request's. The peer evaluates every prompt and writes
    its answer; the proxy hands the app the bench's scripted content instead (`scripted`,
    the simulator's): the tiny random model's words would fail the tribunal, and so the
    prompts are those the simulated server sees. Everything else (`/v1/models`, `/props`,
    `/tokenize`) is the peer's own answer."""

    peer: Peer
    calls: list[Call] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._one_at_a_time = asyncio.Lock()
        self._server: TestServer | None = None
        self._session: aiohttp.ClientSession | None = None
        self.url = ""
        self.started = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.started

    async def start(self) -> PeerProxy:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600))
        self._server = TestServer(app, host="127.0.0.1")
        await self._server.start_server()
        self.url = str(self._server.make_url("")).rstrip("/")
        return self

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.Response:
        assert self._session is not None
        async with self._session.request(
            request.method,
            self.peer.url + request.path_qs,
            data=await request.read(),
            headers={"Content-Type": request.headers.get("Content-Type", "application/json")},
        ) as peer:
            return web.Response(
                status=peer.status, body=await peer.read(), content_type=peer.content_type
            )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        body = msgspec.json.decode(await request.read())
        text, _ = scripted(body)
        async with self._one_at_a_time:
            call = Call(request.headers.get(PURPOSE_HEADER, ""), self.now())
            self.calls.append(call)
            offset = self.peer.log.stat().st_size
            # Asked unstreamed: llama-cpp-python's streams carry no usage.
            async with self._session.post(
                self.peer.url + "/v1/chat/completions", json={**body, "stream": False}
            ) as peer:
                if peer.status != 200:  # the app's to handle, as from the peer itself
                    call.purpose += f" ({peer.status})"
                    call.ended = self.now()
                    return web.Response(
                        status=peer.status, body=await peer.read(), content_type=peer.content_type
                    )
                done = await peer.json()
            call.ended = self.now()
            with self.peer.log.open("rb") as log:
                log.seek(offset)
                excerpt = log.read().decode(errors="replace")
        usage = done["usage"]
        account = prompt_account(excerpt, usage["prompt_tokens"])
        call.prompt, call.cached = usage["prompt_tokens"], account.cached
        call.output = usage["completion_tokens"]
        call.alone = call.ended - call.arrived
        return await answer(request, body, done["model"], text, usage)


class Recording(Protocol):
    calls: list[Call]

    def now(self) -> float: ...


async def drive(
    servers: Sequence[Recording], overrides: dict[str, Any], turns: int
) -> list[TurnFigures]:
    """The real app against `servers` (the first one's clock times the turns): `turns`
    ordinary sentences, one at a time, each turn's calls split at its delivery."""
    clock = servers[0]
    figures: list[TurnFigures] = []
    with tempfile.TemporaryDirectory() as tmp:
        settings = defaults(
            data_dir=tmp,
            redis_appendfsync="no",
            rate_limit_per_second=1e6,
            llm_provider="openai",
            model_timeout=120.0,
            **PURPOSE_SETTING,
            **overrides,
        )
        app = create_app(settings, local_token=TOKEN)
        async with TestClient(TestServer(app)) as client:
            ws = await client.ws_connect("/api/ws", headers=AUTH)
            for i in range(turns):
                first = [len(s.calls) for s in servers]
                sent = clock.now()
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
                delivered = clock.now()
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


PEER_N_CTX = 8192  # a whole turn's prompts at this vocabulary's ~1 token per character


async def run_peer(turns: int) -> list[TurnFigures]:
    with tempfile.TemporaryDirectory() as folder, running(Path(folder), PEER_N_CTX) as peer:
        proxy = await PeerProxy(peer).start()
        try:
            # The tiny model's vocabulary is one token per character (two for an umlaut's
            # bytes), so the budget counts 1 character per token, as the peer suite does.
            return await drive(
                [proxy],
                {
                    "llm_url": proxy.url,
                    "llm_model": None,
                    "llm_context": PEER_N_CTX,
                    "chars_per_token": 1.0,
                    "journal_min_context": PEER_N_CTX,
                },
                turns,
            )
        finally:
            await proxy.close()


def report_peer(figures: list[TurnFigures]) -> None:
    print(
        f"\nthe real llama.cpp peer (llama-cpp-python, the tiny random model of tests/peer, "
        f"n_ctx {PEER_N_CTX}, one context): prompt tokens as its log counts them"
    )
    print(
        f"{'turn':>4} {'POST→deliv s':>12} {'before':>6} {'after':>5} {'prompt':>6} "
        f"{'cached':>6} {'processed':>9} {'cache %':>7}  calls: purpose cached/prompt"
    )
    shares = []
    for n, t in enumerate(figures, 1):
        prompt = sum(c.prompt for c in t.calls)
        cached = sum(c.cached for c in t.calls)
        shares.append(cached / max(prompt, 1))
        calls = ", ".join(
            f"{c.purpose} {c.cached}/{c.prompt}" + (" |" if c is t.before[-1] else "")
            for c in t.calls
        )
        print(
            f"{n:>4} {t.seconds:>12.2f} {len(t.before):>6} {len(t.after):>5} {prompt:>6} "
            f"{cached:>6} {prompt - cached:>9} {100 * shares[-1]:>6.0f}%  {calls}"
        )
    print(
        f"p50: prompt tokens from the cache {100 * statistics.median(shares):.0f} % (goal ≥ 70 %), "
        f"POST→delivery {statistics.median(t.seconds for t in figures):.2f} s (wall clock, "
        f"the tiny model on this machine's CPU: it shows the turn runs, not a speed)"
    )


async def main_async(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING, stream=open("/dev/null", "w"))  # noqa: SIM115
    if args.peer:
        report_peer(await run_peer(args.turns))
        return
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
    parser.add_argument(
        "--peer",
        action="store_true",
        help="against the real llama.cpp peer of `make test-peer` instead of the simulation",
    )
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
