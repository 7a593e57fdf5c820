"""A real fake model server for tests: aiohttp, speaking the Ollama and the OpenAI dialect.

Use it through the `fake_model` fixture (loaded for every test by `tests/conftest.py`):

    async def test_reply(fake_model, make_settings, aiohttp_client):
        fake_model.script("responder", "Hallo!")                   # next responder answer
        fake_model.script("perception", {"emotion": "freude"})     # JSON answer
        settings = make_settings(**fake_model.overrides())
        # = llm_provider="openai", llm_url=fake_model.url, llm_model="fake", llm_context=8192,
        #   fast retry backoff and the purpose header on (PURPOSE_SETTING)
        ...
        assert fake_model.requests[-1].purpose == "responder"

It starts on a free port of 127.0.0.1 and serves

- Ollama: `POST /api/chat` (NDJSON stream, or one answer with `"stream": false`),
  `GET /api/tags`, `POST /api/show` (window as `model_info["llama.context_length"]`, and as
  `num_ctx` in `parameters` when `ollama_num_ctx` is set);
- OpenAI: `POST /v1/chat/completions` (SSE stream with a usage chunk when asked by
  `stream_options.include_usage`, or one answer), `GET /v1/models` (window as
  `context_length` when `context_length` is set; None: the field is absent, like
  llama-cpp-python's server);
- llama.cpp's and vLLM's extras: `GET /props` (`total_slots` and `n_ctx` when `total_slots` is
  set; else 404, as a server that is not llama.cpp's), `POST /tokenize` (with `tokenizer =
  "llama.cpp"`: `{"tokens": […]}` for `content`; `"vllm"`: `{"count"}` for `prompt`; the
  fake's own count, `ceil(chars / 4)`, or `tokenize_count(text)` where set; None: 404).
  `tokenize_fault = Fault.status(503)` (or `Fault.drop()`) makes the tokenizer fail alone.

**Which purpose.** With the test setting `llm_test_purpose_header` on (`PURPOSE_SETTING`;
`overrides()` has it) a local provider sends the purpose of every call in the header
`X-Novaberg-Purpose`; the fake answers by it. A remote provider never sends it (not even
with the setting on: `llm_remote`, or a host off this network), so its requests come
unnamed: they take the steps scripted for `UNNAMED`, and `chats(UNNAMED)` lists them.

**Scripting.** `script(purpose, *steps)` queues steps, one consumed per request of that
purpose, in order. `always(purpose, step)` answers when the queue is empty. With neither,
`default` answers (None: the minimal valid instance of the request's JSON schema — design §6
neutral defaults — or the text `default_text` for a text call). A step is

- `str`: the answer text (for a structured call, the raw content: script invalid JSON so),
- `dict` / `list` / msgspec Struct: the answer as JSON text,
- `Reply(text_or_value, delay=…, chunks=[…], chunk_delay=…, finish_reason=…,
  usage=(prompt, completion), drop_after=n, hold=event)` (`drop_after`: the stream breaks off
  after n pieces; `hold`: a `threading.Event` the answer waits for, a Fault's too),
- a `Fault`: `Fault.status(500)`, `Fault.rate_limited(retry_after=1)`, `Fault.hang()` (no
  answer until the client goes), `Fault.garbage()` (200, not JSON), `Fault.context_length()`
  (400 in the dialect's words), `Fault.empty_stream()` (200 and an empty event stream, as
  llama.cpp does for an over-long streamed prompt), `Fault.drop()` (close the connection),
- a callable `step(request) -> step`, for answers that depend on the request.

`refuse_json_schema = True` answers a `json_schema` response format with 500, and
`stream_usage = False` leaves the usage chunk out of OpenAI streams, as llama-cpp-python's
server does. `metadata_fault = Fault.status(503)` makes the metadata endpoints (`/v1/models`,
`/api/tags`, `/api/show`, `/props`) fail; None restores them.

**Looking at what happened.** `requests` lists every request (`RecordedRequest`: path,
dialect, purpose, body, messages, schema, stream, headers, `disconnected` = the client
closed the connection while the fake still had something to say). `chats(purpose)` lists
the chat requests, `await wait_requests(n, purpose)` waits until n chat requests (of that
purpose) have arrived — the one way a test waits for the model to be called;
`max_in_flight` is the most chat requests it answered at once; a chat request's `at` and
`ended` say when it arrived and when its answer was out, so a test can see two overlap.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.waiting import WAIT, until

PURPOSE_HEADER = "X-Novaberg-Purpose"
# The test setting without which no provider sends PURPOSE_HEADER (app.llm.providers.base).
PURPOSE_SETTING: dict[str, Any] = {"llm_test_purpose_header": True}
# A test scripts the router's answers and the order of a turn's calls: the model routes
# every message and the user's salience runs in path 1 (issue 36's rules route where they
# are sure, and the user's salience runs after delivery; tests of that pass
# `route_by_rules=True`, `user_salience_after_delivery=True`).
SCRIPTED_ROUTER: dict[str, Any] = {"route_by_rules": False,
                                   "user_salience_after_delivery": False}
# The purpose of a request without the header (a remote provider's, or the setting is off).
UNNAMED = ""
CHARS_PER_TOKEN = 4  # the fake's own token count: ceil(chars / 4)


@dataclass
class Reply:
    """An answer with details: latency, how it streams, finish reason, usage."""

    content: Any = "ok"
    delay: float = 0.0  # seconds before the answer starts
    chunks: list[str] | None = None  # stream pieces (default: word by word)
    chunk_delay: float = 0.0  # seconds between stream pieces
    finish_reason: str = "stop"
    usage: tuple[int, int] | None = None  # (prompt, completion); default: counted
    drop_after: int | None = None  # stream: close the connection after this many pieces
    # Set by the test (from any thread): the answer waits for it — a stage held while the
    # test looks at what the app shows meanwhile, however slow the machine is.
    hold: threading.Event | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return msgspec.json.encode(self.content).decode()


@dataclass
class Fault:
    """A scripted failure."""

    kind: str
    status_code: int = 500
    message: str = "scripted fault"
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None  # as Reply's: the fault waits for it

    @classmethod
    def status(cls, code: int, message: str = "scripted fault",
               headers: dict[str, str] | None = None) -> Fault:
        return cls("status", code, message, headers or {})

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = None) -> Fault:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls("status", 429, "rate limited", headers)

    @classmethod
    def hang(cls) -> Fault:
        return cls("hang")

    @classmethod
    def garbage(cls) -> Fault:
        return cls("garbage", 200)

    @classmethod
    def context_length(cls) -> Fault:
        return cls("context_length", 400)

    @classmethod
    def empty_stream(cls) -> Fault:
        return cls("empty_stream", 200)

    @classmethod
    def drop(cls) -> Fault:
        return cls("drop")


Step = Any  # str | dict | list | msgspec.Struct | Reply | Fault | Callable[[RecordedRequest], Step]


@dataclass
class RecordedRequest:
    method: str
    path: str
    dialect: str  # "ollama" | "openai"
    purpose: str | None
    headers: dict[str, str]
    body: Any
    stream: bool = False
    disconnected: bool = False
    answered: str = ""  # what the fake did: "reply", "fault:<kind>", "metadata"
    at: float = field(default_factory=time.monotonic)  # arrival, monotonic clock
    ended: float | None = None  # a chat request's answer was out (monotonic clock)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return (self.body or {}).get("messages", []) if isinstance(self.body, dict) else []

    @property
    def schema(self) -> dict[str, Any] | None:
        """The JSON schema the request asked for (either dialect), or None."""
        if not isinstance(self.body, dict):
            return None
        if self.dialect == "ollama":
            fmt = self.body.get("format")
            return fmt if isinstance(fmt, dict) else None
        response_format = self.body.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return (response_format.get("json_schema") or {}).get("schema")
        return response_format.get("schema")

    @property
    def is_chat(self) -> bool:
        return self.path in ("/api/chat", "/v1/chat/completions")


class FakeModel:
    """The fake server. `await start()` / `await close()`, or use the fixture."""

    def __init__(self, *, context_length: int | None = 8192, models: tuple[str, ...] = ("fake",),
                 ollama_num_ctx: int | None = None) -> None:
        self.context_length = context_length
        self.models = list(models)
        self.ollama_num_ctx = ollama_num_ctx
        self.default: Step | None = None
        self.default_text = "ok"
        self.metadata_fault: Fault | None = None
        # Like llama-cpp-python's server: `response_format.type = "json_schema"` answers 500;
        # only `{"type": "json_object", "schema": …}` is understood.
        self.refuse_json_schema = False
        # False: OpenAI streams never carry usage (llama-cpp-python ignores stream_options).
        self.stream_usage = True
        self.total_slots: int | None = None  # /props states them (llama.cpp); None: 404
        self.tokenizer: str | None = None  # "llama.cpp" | "vllm": /tokenize answers; None: 404
        self.tokenize_count: Callable[[str], int] | None = None  # else ceil(chars / 4)
        self.tokenize_fault: Fault | None = None
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0  # chat requests being answered now
        self.max_in_flight = 0  # the most at once, so far
        self._queues: dict[str, deque[Step]] = {}
        self._always: dict[str, Step] = {}
        self._arrived = asyncio.Condition()
        self._server: TestServer | None = None
        self.url = ""

    # --- scripting -------------------------------------------------------------------------

    def script(self, purpose: str, *steps: Step) -> FakeModel:
        self._queues.setdefault(purpose, deque()).extend(steps)
        return self

    def always(self, purpose: str, step: Step) -> FakeModel:
        self._always[purpose] = step
        return self

    def overrides(self, dialect: str = "openai", **more: Any) -> dict[str, Any]:
        """Settings overrides that point the app at this fake (fast retry backoff, the
        purpose header on). The one recipe: the subprocess tests' environment
        (tests/kill_support.py) and the browser tests' config.toml are made from it."""
        return {"llm_provider": dialect, "llm_url": self.url, "llm_model": self.models[0],
                "llm_context": 8192, "model_backoff_seconds": 0.01, **PURPOSE_SETTING,
                **SCRIPTED_ROUTER, **more}

    def chats(self, purpose: str | None = None) -> list[RecordedRequest]:
        """The chat requests, or those of one purpose (`UNNAMED`: those without one)."""
        return [r for r in self.requests
                if r.is_chat and (purpose is None or (r.purpose or UNNAMED) == purpose)]

    async def wait_requests(self, count: int = 1, purpose: str | None = None, *,
                            timeout: float = WAIT) -> list[RecordedRequest]:
        """The chat requests (of one purpose, as `chats`) once `count` of them have arrived,
        woken by each arrival. When they do not arrive within `timeout` seconds the test fails
        saying which requests did."""
        try:
            async with asyncio.timeout(timeout):
                async with self._arrived:
                    await self._arrived.wait_for(lambda: len(self.chats(purpose)) >= count)
        except TimeoutError:
            arrived = [r.purpose or UNNAMED for r in self.chats()]
            raise AssertionError(f"waited {timeout} s for {count} {purpose or 'chat'} "
                                 f"request(s); arrived: {arrived}") from None
        return self.chats(purpose)

    async def wait_disconnected(self, request: RecordedRequest, timeout: float = 5.0) -> None:
        await until(lambda: request.disconnected, timeout=timeout, every=0.01,
                    what=f"the client to close request {request.path} ({request.purpose})")

    # --- life cycle ------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/chat", self._ollama_chat)
        app.router.add_get("/api/tags", self._ollama_tags)
        app.router.add_post("/api/show", self._ollama_show)
        app.router.add_post("/v1/chat/completions", self._openai_chat)
        app.router.add_get("/v1/models", self._openai_models)
        app.router.add_get("/props", self._props)
        app.router.add_post("/tokenize", self._tokenize)
        return app

    async def start(self) -> FakeModel:
        self._server = TestServer(self.app(), host="127.0.0.1")
        await self._server.start_server()
        self.url = str(self._server.make_url("")).rstrip("/")
        return self

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()

    # --- recording and choosing -----------------------------------------------------------

    async def _record(self, request: web.Request, dialect: str) -> RecordedRequest:
        raw = await request.read()
        try:
            body = msgspec.json.decode(raw) if raw else None
        except msgspec.DecodeError:
            body = raw.decode("utf-8", "replace")
        default_stream = dialect == "ollama"  # Ollama streams unless told not to
        stream = bool(body.get("stream", default_stream)) if isinstance(body, dict) else False
        recorded = RecordedRequest(request.method, request.path, dialect,
                                   request.headers.get(PURPOSE_HEADER), dict(request.headers),
                                   body, stream)
        self.requests.append(recorded)
        async with self._arrived:
            self._arrived.notify_all()
        return recorded

    def _step(self, recorded: RecordedRequest) -> Step:
        purpose = recorded.purpose or UNNAMED
        queue = self._queues.get(purpose)
        if queue:
            step = queue.popleft()
        elif purpose in self._always:
            step = self._always[purpose]
        elif self.default is not None:
            step = self.default
        elif recorded.schema is not None:
            step = minimal_instance(recorded.schema)
        else:
            step = self.default_text
        while callable(step) and not isinstance(step, (Reply, Fault, type)):
            step = step(recorded)
        return step if isinstance(step, (Reply, Fault)) else Reply(step)

    # --- metadata --------------------------------------------------------------------------

    async def _metadata_fault(self, request: web.Request, dialect: str) -> web.Response | None:
        recorded = await self._record(request, dialect)
        recorded.answered = "metadata"
        if self.metadata_fault is None:
            return None
        recorded.answered = f"fault:{self.metadata_fault.kind}"
        if self.metadata_fault.kind == "hang":
            while not _gone(request):
                await asyncio.sleep(0.01)
            recorded.disconnected = True
            return web.Response(status=499)
        return _fault_response(self.metadata_fault, dialect)

    async def _ollama_tags(self, request: web.Request) -> web.Response:
        if (fault := await self._metadata_fault(request, "ollama")) is not None:
            return fault
        return web.json_response({"models": [{"name": m, "model": m} for m in self.models]})

    async def _ollama_show(self, request: web.Request) -> web.Response:
        if (fault := await self._metadata_fault(request, "ollama")) is not None:
            return fault
        info = {"general.architecture": "llama"}
        if self.context_length:
            info["llama.context_length"] = self.context_length
        parameters = f"num_ctx                        {self.ollama_num_ctx}" \
            if self.ollama_num_ctx else ""
        return web.json_response({"model_info": info, "parameters": parameters,
                                  "details": {"family": "llama"}})

    async def _openai_models(self, request: web.Request) -> web.Response:
        if (fault := await self._metadata_fault(request, "openai")) is not None:
            return fault
        entries = []
        for model in self.models:
            entry: dict[str, Any] = {"id": model, "object": "model", "owned_by": "fake"}
            if self.context_length:
                entry["context_length"] = self.context_length
            entries.append(entry)
        return web.json_response({"object": "list", "data": entries})

    async def _props(self, request: web.Request) -> web.Response:
        if (fault := await self._metadata_fault(request, "openai")) is not None:
            return fault
        if self.total_slots is None:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        return web.json_response({"total_slots": self.total_slots,
                                  "default_generation_settings": {"n_ctx": self.context_length}})

    async def _tokenize(self, request: web.Request) -> web.Response:
        recorded = await self._record(request, "openai")
        recorded.answered = "tokenize"
        if self.tokenizer is None:
            return web.json_response({"error": {"message": "File Not Found"}}, status=404)
        if self.tokenize_fault is not None:
            recorded.answered = f"fault:{self.tokenize_fault.kind}"
            if self.tokenize_fault.kind == "drop":
                if request.transport is not None:
                    request.transport.close()
                return web.Response(status=499)
            return _fault_response(self.tokenize_fault, "openai")
        body = recorded.body if isinstance(recorded.body, dict) else {}
        text = str(body.get("content" if self.tokenizer == "llama.cpp" else "prompt", ""))
        count = self.tokenize_count(text) if self.tokenize_count is not None \
            else math.ceil(len(text) / CHARS_PER_TOKEN)
        if self.tokenizer == "llama.cpp":
            return web.json_response({"tokens": list(range(count))})
        return web.json_response({"count": count, "max_model_len": self.context_length,
                                  "tokens": list(range(count))})

    # --- chat ------------------------------------------------------------------------------

    async def _ollama_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._chat(request, "ollama")

    async def _openai_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._chat(request, "openai")

    async def _chat(self, request: web.Request, dialect: str) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, dialect)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request, dialect: str) -> web.StreamResponse:
        recorded = await self._record(request, dialect)
        try:
            return await self._respond(request, recorded)
        except (asyncio.CancelledError, ConnectionResetError):
            # aiohttp cancels a handler whose client has gone.
            recorded.disconnected = True
            raise
        finally:
            recorded.ended = time.monotonic()

    async def _respond(self, request: web.Request,
                       recorded: RecordedRequest) -> web.StreamResponse:
        if self.refuse_json_schema and recorded.dialect == "openai" and \
                ((recorded.body or {}).get("response_format") or {}).get("type") == "json_schema":
            recorded.answered = "fault:json_schema_refused"
            return web.json_response({"error": {
                "message": "1 validation error: ('body', 'response_format', 'type') Input "
                           "should be 'text' or 'json_object'",
                "type": "internal_server_error"}}, status=500)
        step = self._step(recorded)
        if step.hold is not None and not await _wait_unless_gone(request, step.hold):
            recorded.disconnected = True
            return web.Response(status=499)
        if isinstance(step, Fault):
            recorded.answered = f"fault:{step.kind}"
            return await self._fault(request, recorded, step)
        recorded.answered = "reply"
        if step.delay and not await _sleep_unless_gone(request, step.delay):
            recorded.disconnected = True
            return web.Response(status=499)
        if recorded.stream:
            return await self._stream(request, recorded, step)
        return web.json_response(self._whole(recorded, step))

    def _usage(self, recorded: RecordedRequest, reply: Reply, text: str) -> tuple[int, int]:
        if reply.usage is not None:
            return reply.usage
        chars = sum(len(str(m.get("content", ""))) for m in recorded.messages)
        return math.ceil(chars / CHARS_PER_TOKEN), math.ceil(len(text) / CHARS_PER_TOKEN)

    def _whole(self, recorded: RecordedRequest, reply: Reply) -> dict[str, Any]:
        text = reply.text()
        prompt, completion = self._usage(recorded, reply, text)
        model = (recorded.body or {}).get("model") or self.models[0]
        if recorded.dialect == "ollama":
            return {"model": model, "created_at": _now(), "done": True,
                    "done_reason": reply.finish_reason,
                    "message": {"role": "assistant", "content": text},
                    "prompt_eval_count": prompt, "eval_count": completion}
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                          "total_tokens": prompt + completion}}

    async def _stream(self, request: web.Request, recorded: RecordedRequest,
                      reply: Reply) -> web.StreamResponse:
        text = reply.text()
        pieces = reply.chunks if reply.chunks is not None else _word_pieces(text)
        ollama = recorded.dialect == "ollama"
        response = web.StreamResponse(headers={
            "Content-Type": "application/x-ndjson" if ollama else "text/event-stream"})
        await response.prepare(request)
        sent = 0
        async for event in self._events(recorded, reply, pieces, text):
            await response.write(event)
            sent += 1
            if reply.drop_after is not None and sent > reply.drop_after:
                request.transport.close()  # mid-stream, no proper end
                return response
        await response.write_eof()
        return response

    async def _events(self, recorded: RecordedRequest, reply: Reply, pieces: list[str],
                      text: str) -> AsyncIterator[bytes]:
        model = (recorded.body or {}).get("model") or self.models[0]
        prompt, completion = self._usage(recorded, reply, text)
        if recorded.dialect == "ollama":
            for piece in pieces:
                yield _ndjson({"model": model, "created_at": _now(), "done": False,
                               "message": {"role": "assistant", "content": piece}})
                await self._pause(reply)
            yield _ndjson({"model": model, "created_at": _now(), "done": True,
                           "done_reason": reply.finish_reason,
                           "message": {"role": "assistant", "content": ""},
                           "prompt_eval_count": prompt, "eval_count": completion})
            return
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk",
                "created": int(time.time()), "model": model}
        yield _sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant",
                                                                "content": ""},
                                         "finish_reason": None}]})
        for piece in pieces:
            yield _sse({**base, "choices": [{"index": 0, "delta": {"content": piece},
                                             "finish_reason": None}]})
            await self._pause(reply)
        yield _sse({**base, "choices": [{"index": 0, "delta": {},
                                         "finish_reason": reply.finish_reason}]})
        if self.stream_usage and \
                ((recorded.body or {}).get("stream_options") or {}).get("include_usage"):
            yield _sse({**base, "choices": [],
                        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                  "total_tokens": prompt + completion}})
        yield b"data: [DONE]\n\n"

    async def _pause(self, reply: Reply) -> None:
        if reply.chunk_delay:
            await asyncio.sleep(reply.chunk_delay)

    async def _fault(self, request: web.Request, recorded: RecordedRequest,
                     fault: Fault) -> web.StreamResponse:
        if fault.kind == "hang":
            while not _gone(request):
                await asyncio.sleep(0.01)
            recorded.disconnected = True
            return web.Response(status=499)
        if fault.kind == "drop":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=499)
        if fault.kind == "empty_stream":
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write_eof()
            return response
        if fault.kind == "garbage" and recorded.stream:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b"data: {this is not json\n\n")
            await response.write_eof()
            return response
        return _fault_response(fault, recorded.dialect)


def _fault_response(fault: Fault, dialect: str) -> web.Response:
    if fault.kind == "garbage":
        return web.Response(status=200, body=b"<html>this is not json{",
                            content_type="application/json")
    if fault.kind == "context_length":
        if dialect == "ollama":
            return web.json_response({"error": "the input length exceeds the context length"},
                                     status=400)
        return web.json_response({"error": {
            "message": "This model's maximum context length is 8192 tokens. However, your "
                       "messages resulted in more tokens.",
            "type": "invalid_request_error", "code": "context_length_exceeded"}}, status=400)
    body = ({"error": fault.message} if dialect == "ollama"
            else {"error": {"message": fault.message, "type": "server_error",
                            "code": fault.status_code}})
    return web.json_response(body, status=fault.status_code, headers=fault.headers)


def _gone(request: web.Request) -> bool:
    return request.transport is None or request.transport.is_closing()


async def _sleep_unless_gone(request: web.Request, seconds: float) -> bool:
    """Sleep; False as soon as the client has gone."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _gone(request):
            return False
        await asyncio.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
    return not _gone(request)


async def _wait_unless_gone(request: web.Request, event: threading.Event) -> bool:
    """Wait until `event` is set (a minute at most); False as soon as the client has gone."""
    await until(lambda: event.is_set() or _gone(request), timeout=60,
                what="the test to release the held answer")
    return not _gone(request)


def _word_pieces(text: str) -> list[str]:
    pieces, current = [], ""
    for char in text:
        current += char
        if char == " ":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + msgspec.json.encode(data) + b"\n\n"


def _ndjson(data: dict[str, Any]) -> bytes:
    return msgspec.json.encode(data) + b"\n"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def minimal_instance(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Any:
    """The minimal valid instance of a JSON schema (false, first enum value, empty
    arrays, zero or the minimum, empty strings, null where allowed)."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return minimal_instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = schema[key]
            for option in options:
                if option.get("type") == "null":
                    return None
            return minimal_instance(options[0], defs)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = "null" if "null" in kind else kind[0]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: minimal_instance(properties[name], defs)
                for name in schema.get("required", [])}
    if kind == "array":
        return [minimal_instance(schema.get("items") or {}, defs)
                for _ in range(schema.get("minItems", 0))]
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = 0 if low is None or low <= 0 else low
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            value = schema["exclusiveMinimum"] + (1 if kind == "integer" else 1e-9)
        if "maximum" in schema and value > schema["maximum"]:
            value = schema["maximum"]
        return int(value) if kind == "integer" else float(value)
    if kind == "string":
        return "-" * schema.get("minLength", 0)
    if kind == "null":
        return None
    return None


@pytest.fixture
async def fake_model() -> AsyncIterator[FakeModel]:
    """A started `FakeModel` on a free port of 127.0.0.1; closed after the test."""
    fake = FakeModel()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()


@pytest.fixture
async def start_fake_model() -> AsyncIterator[Callable[..., Any]]:
    """A factory: `fake = await start_fake_model(context_length=None)`; all closed after
    the test. For tests that need several fakes or a differently configured one."""
    started: list[FakeModel] = []

    async def start(**kwargs: Any) -> FakeModel:
        fake = await FakeModel(**kwargs).start()
        started.append(fake)
        return fake

    try:
        yield start
    finally:
        for fake in started:
            await fake.close()
