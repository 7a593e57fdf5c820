"""Model gateway overhead: a gateway call against a direct aiohttp request to the same server.

    .venv/bin/python bench/gateway.py [--iterations 2000]

The fake model server of the test suite (`tests/fakemodel.py`, zero latency, OpenAI dialect)
runs in this process. Both sides send the same chat request for the same short answer and
decode the answer; they alternate, so drift hits both alike.

- Floor: one `POST /v1/chat/completions` with aiohttp on a kept-alive session, the JSON
  answer decoded with msgspec — the least any client must do.
- Gateway: `Gateway.complete(...)` — argument check, cached window, budget, concurrency slot,
  retry wrapper, the provider request, trace record and its JSON log line (logging configured
  as in the app, written to /dev/null).
- Also shown: the same text call with the gateway's per-call log line switched off (to show
  its share), a structured call (schema validation) and a stream, each against its floor.

Printed: p50/p99 in milliseconds and the ratio of the p50s. Target: <= 1.2x at p50 for a
non-streaming call.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.core import log as logctx  # noqa: E402
from app.core.settings import defaults  # noqa: E402
from app.llm import Gateway  # noqa: E402
from app.llm.schema import json_schema  # noqa: E402
from bench.percentiles import p50_p99  # noqa: E402
from tests.fakemodel import FakeModel  # noqa: E402

TARGET = 1.2
FAKE_REQUESTS: list = []  # the running fake's request log, cleared between samples
MESSAGES = [{"role": "system", "content": "Du bist Nova, eine Begleiterin."},
            {"role": "user", "content": "Hallo Nova, wie war dein Tag? " * 20}]


class Mood(msgspec.Struct):
    emotion: str
    arousal: float


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return (time.perf_counter() - start) * 1000


async def compare(name: str, floor: Callable[[], Awaitable[object]],
                  subject: Callable[[], Awaitable[object]], iterations: int) -> float:
    for _ in range(min(200, iterations)):  # warm-up: connections, caches, JIT-free paths
        await floor()
        await subject()
    floor_ms, subject_ms = [], []
    for _ in range(iterations):
        floor_ms.append(await timed(floor))
        subject_ms.append(await timed(subject))
        FAKE_REQUESTS.clear()  # the fake's request log is a test aid: keep the heap flat
    f50, f99 = p50_p99(floor_ms)
    s50, s99 = p50_p99(subject_ms)
    ratio = s50 / f50
    print(f"{name:<22} floor p50 {f50:6.3f} ms  p99 {f99:6.3f} ms | "
          f"gateway p50 {s50:6.3f} ms  p99 {s99:6.3f} ms | ratio p50 {ratio:4.2f}x")
    return ratio


async def main(iterations: int) -> int:
    logctx.configure("info", stream=open(os.devnull, "w"))  # noqa: SIM115 — lives as long as we do
    fake = await FakeModel().start()
    FAKE_REQUESTS[:] = []
    fake.requests = FAKE_REQUESTS
    fake.always("bench", "Mir geht es gut, danke der Nachfrage!")
    fake.always("bench_structured", {"emotion": "freude", "arousal": 0.6})
    settings = defaults(data_dir=tempfile.mkdtemp(prefix="novaberg-bench-"),
                        **fake.overrides(llm_trace_size=50))
    url = fake.url + "/v1/chat/completions"
    headers = {"Content-Type": "application/json", "X-Novaberg-Purpose": "bench"}
    plain = msgspec.json.encode({"model": "fake", "messages": MESSAGES, "max_tokens": 64,
                                 "temperature": 0.7, "stream": False})
    structured = msgspec.json.encode({
        "model": "fake", "messages": MESSAGES, "max_tokens": 64, "temperature": 0.7,
        "stream": False, "response_format": {"type": "json_schema", "json_schema": {
            "name": "Mood", "schema": json_schema(Mood)}}})
    streamed = msgspec.json.encode({"model": "fake", "messages": MESSAGES, "max_tokens": 64,
                                    "temperature": 0.7, "stream": True,
                                    "stream_options": {"include_usage": True}})
    decoder = msgspec.json.Decoder(Mood)

    async with aiohttp.ClientSession() as session, Gateway(settings) as gateway:
        async def direct() -> str:
            async with session.post(url, data=plain, headers=headers) as response:
                return msgspec.json.decode(await response.read())["choices"][0]["message"][
                    "content"]

        async def direct_structured() -> Mood:
            async with session.post(url, data=structured, headers={
                    **headers, "X-Novaberg-Purpose": "bench_structured"}) as response:
                body = msgspec.json.decode(await response.read())
                return decoder.decode(body["choices"][0]["message"]["content"])

        async def direct_stream() -> str:
            parts = []
            async with session.post(url, data=streamed, headers=headers) as response:
                async for line in response.content:
                    if line.startswith(b"data: {"):
                        choices = msgspec.json.decode(line[6:]).get("choices") or [{}]
                        parts.append((choices[0].get("delta") or {}).get("content") or "")
            return "".join(parts)

        async def via_gateway() -> str:
            return (await gateway.complete("bench", MESSAGES, max_tokens=64)).text

        async def via_gateway_structured() -> object:
            return (await gateway.complete("bench_structured", MESSAGES, schema=Mood,
                                           max_tokens=64)).value

        async def via_gateway_stream() -> str:
            return "".join([d async for d in gateway.stream("bench", MESSAGES, max_tokens=64)])

        assert await direct() == await via_gateway()
        assert await direct_structured() == await via_gateway_structured()
        assert await direct_stream() == await via_gateway_stream()
        print(f"gateway overhead, {iterations} calls each, fake model with zero latency")
        ratio = await compare("complete (text)", direct, via_gateway, iterations)
        gateway_log = logging.getLogger("app.llm.gateway")
        gateway_log.disabled = True  # informational: what the per-call log line costs
        await compare("  same, no log line", direct, via_gateway, iterations)
        gateway_log.disabled = False
        await compare("complete (structured)", direct_structured, via_gateway_structured,
                      iterations)
        await compare("stream", direct_stream, via_gateway_stream, iterations // 2)
    await fake.close()
    verdict = "ok" if ratio <= TARGET else "ABOVE TARGET"
    print(f"target: text call p50 ratio <= {TARGET}x -> {ratio:.2f}x {verdict}")
    return 0  # a benchmark reports; it does not gate (the verdict line says where we stand)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
    sys.exit(asyncio.run(main(parser.parse_args().iterations)))
