"""The model gateway: every model call of the product goes through `Gateway` (SPEC §7).

    result = await gateway.complete("perception", messages, schema=Perception, max_tokens=400,
                                    user_id=user_id)
    async for delta in gateway.stream("responder", messages, max_tokens=600, user_id=...): ...

`user_id` names whose call it is: for a remote provider the prompt is masked with that
user's identity registry, and a remote call without it is refused (`privacy_blocked`,
nothing is sent) — fail closed.

One call, in order:
1. privacy: for a remote provider the whole prompt is masked (`app.llm.privacy`) with the
   detectors and the user's registered people;
2. budget: the context window (provider, cached `model_metadata_ttl`; a stale cache serves
   while the provider is down; else `llm_context`; else `model_metadata_unknown`), the
   purpose's minimum window, then `app.llm.budget` — all before any network call;
3. a slot of the provider's concurrency limit (`model_concurrency`);
4. the provider call with the per-call timeout and bounded retries (connection errors, 5xx,
   429 with Retry-After; exponential backoff with jitter, at most `model_retries` retries
   within `model_retry_max_seconds`);
5. structured output: decode and validate with msgspec; invalid output gets exactly one
   repair retry that shows the model the validation error, then `model_bad_output`;
6. privacy: a reply with a plaintext identity is blocked before demasking; one corrective
   retry (the same prompt and a reminder to use the placeholders), then `privacy_blocked`;
   else the reply is demasked;
7. trace: one record in the ring and one log line, whatever the outcome.

Cancelling the caller cancels the HTTP request; the server sees the connection close.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp
import msgspec

from app import log as logctx
from app.llm import budget as budgeting
from app.llm import detect
from app.llm.errors import ModelError
from app.llm.privacy import IdentityRegistry, Masker, NameIndex, PrivacyStats, StreamUnmasker
from app.llm.privacy import local_model
from app.llm.privacy import warm_up as warm_up_privacy
from app.llm.providers import PROVIDERS, Provider
from app.llm.schema import decode, json_schema
from app.llm.trace import Trace, TraceRing
from app.llm.types import ROLES, Call, Completion, Message, Reply, Usage
from app.settings import Settings

log = logging.getLogger(__name__)

T = TypeVar("T")

REPAIR_PROMPT = (
    "Your previous answer was not valid for the required JSON schema: {error}\n"
    "Answer again with only the corrected JSON object, nothing else.")
PRIVACY_RETRY_PROMPT = (
    "Your previous answer wrote a personal name or identifier in plain text. Answer again; "
    "refer to people and personal data only by the placeholders in square brackets exactly "
    "as given (for example [PERSON_1], [PHONE_1]).")
# Purposes that need a large window (seed 004 §16.2: journal generation needs 32K).
JOURNAL_PURPOSES = ("journal_reconstruct", "journal_generate")
# The settings a choice in the UI changes at run time (`Gateway.switch`, `PUT /api/llm`).
MODEL_CHOICE = frozenset({"llm_provider", "llm_url", "llm_model", "llm_remote", "llm_api_key"})
_LOCAL_HOSTS = ("localhost",)
_LOCAL_SUFFIXES = (".localhost", ".local", ".lan", ".home.arpa", ".internal")


class Gateway:
    """The one way to a model. Create with `Gateway(settings)`, then `await start()`
    (or `async with Gateway(settings) as gateway:`), and `await aclose()` at the end."""

    def __init__(self, settings: Settings, identities: IdentityRegistry | None = None) -> None:
        self.settings = settings
        self.session: aiohttp.ClientSession | None = None
        self.provider: Provider = self._build("offline", None, None)
        self.remote = False
        self.auto_detect = settings.llm_provider is None
        self.detected: list[detect.Detected] = []
        self.traces = TraceRing(settings.llm_trace_size)
        self.min_context: dict[str, int] = dict.fromkeys(JOURNAL_PURPOSES,
                                                         settings.journal_min_context)
        # The users' people (none without a database: then only the detectors mask).
        self.identities = identities
        self.privacy_stats = PrivacyStats()
        self.name_detector: Provider | None = None  # the optional local `detect` role
        self._slots: dict[int, asyncio.Semaphore] = {}
        # provider id -> (window or None when the provider does not say, fetched at)
        self._windows: dict[int, tuple[int | None, float]] = {}
        self._window_locks: dict[int, asyncio.Lock] = {}
        self._detection: asyncio.Task[None] | None = None

    # --- life cycle ------------------------------------------------------------------------

    async def start(self) -> Gateway:
        """Open the HTTP session, build the configured provider, start auto-detection."""
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0))
        settings = self.settings
        if settings.llm_provider is not None:
            self.use(settings.llm_provider, settings.llm_url, settings.llm_model)
            log.info("model provider configured", extra=logctx.fields(**self.info()))
        else:
            self._detection = asyncio.create_task(self._detect(), name="llm-detect")
        if self.settings.llm_remote:
            await asyncio.to_thread(warm_up_privacy)  # the first masked call need not wait
        self._start_name_detector()
        return self

    def _start_name_detector(self) -> None:
        url = self.settings.privacy_detect_url
        if not url:
            return
        if not is_local(url):
            # The detect role reads the plain text: never a server off this network.
            log.warning("privacy_detect_url is not on this machine or the local network; "
                        "the detect role stays off", extra=logctx.fields(
                            setting="privacy_detect_url"))
            return
        self.name_detector = PROVIDERS["openai"](settings=self.settings, session=self.session,
                                                 url=url, model=self.settings.privacy_detect_model,
                                                 api_key=None)

    async def aclose(self) -> None:
        if self._detection is not None:
            self._detection.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._detection
        if self.session is not None:
            await self.session.close()

    async def __aenter__(self) -> Gateway:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def use(self, provider: str, url: str | None, model: str | None) -> None:
        """Switch to a provider (start-up, auto-detection; a choice in the UI: `switch`)."""
        if provider not in PROVIDERS:
            raise ValueError(f"unknown provider {provider!r}; known: {', '.join(PROVIDERS)}")
        if provider != "offline" and not url:
            url = (self.settings.llm_probe_ollama_url if provider == "ollama"
                   else self.settings.llm_probe_openai_url)
        self.provider = self._build(provider, url, model)
        self.remote = provider != "offline" and (self.settings.llm_remote or not is_local(url))

    def _build(self, name: str, url: str | None, model: str | None) -> Provider:
        # The API key goes only to the configured server, never to a probed or tested one.
        key = self.settings.llm_api_key if url and url == self.settings.llm_url else None
        return PROVIDERS[name](settings=self.settings, session=self.session, url=url,
                               model=model, api_key=key)

    async def _detect(self) -> None:
        assert self.session is not None
        self.detected = await detect.probe(self.session, self.settings)
        chosen = detect.choose(self.detected)
        if chosen is not None:
            model = self.settings.llm_model or chosen.models[0]
            self.use(chosen.provider, chosen.url, model)
        log.info("model provider detected" if chosen else "no model server found; offline",
                 extra=logctx.fields(**self.info(),
                                     found=[d.as_dict() for d in self.detected]))

    async def switch(self, **changes: Any) -> None:
        """Use the model the UI chose (`MODEL_CHOICE` settings) from now on, without a
        restart. The settings in force are changed in place (`Settings.update`), so
        `app[SETTINGS]` and the gateway keep reading one truth. A running auto-detection
        finishes first, so it cannot switch back after; from then on it no longer overrides
        the choice."""
        other = sorted(set(changes) - MODEL_CHOICE)
        if other:
            raise ValueError(f"switch changes only the model choice, not {', '.join(other)}")
        await self.ready()
        settings = self.settings
        settings.update(**changes)
        # No provider (Offline chosen in the UI): offline now, auto-detection at the next start.
        self.auto_detect = settings.llm_provider is None
        if settings.llm_provider in (None, "offline"):
            self.use("offline", None, None)
        else:
            self.use(settings.llm_provider, settings.llm_url, settings.llm_model)

    async def ready(self) -> None:
        """Wait for auto-detection (bounded by `llm_probe_timeout`)."""
        if self._detection is not None and not self._detection.done():
            await asyncio.shield(self._detection)

    # --- what it is ------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """`{"provider", "model", "offline"}` — for /api/health and the UI."""
        return {"provider": self.provider.name, "model": self.provider.model,
                "offline": self.provider.offline}

    def describe(self) -> dict[str, Any]:
        """Everything the settings panel shows (`GET /api/llm`); no secrets."""
        cached = self._windows.get(id(self.provider))
        return {
            **self.info(),
            "url": self.provider.url,
            "remote": self.remote,
            "auto_detect": self.auto_detect,
            "detecting": self._detection is not None and not self._detection.done(),
            "detected": [d.as_dict() for d in self.detected],
            "context_window": cached[0] if cached else None,
            "concurrency": self.settings.model_concurrency,
            "api_key": "set" if self.settings.llm_api_key else None,
            "message_limit": self.message_limit(),
        }

    async def context_window(self) -> tuple[int, str]:
        """The current provider's window and where it came from (as a call would budget
        it); `model_metadata_unknown` when nobody says. For callers that must plan a
        whole job before its first call (the journal)."""
        await self.ready()
        return await self._window(self.provider)
    def known_window(self) -> int | None:
        """The current model's window as far as known without asking it (cache, offline
        provider, `llm_context`); None when unknown (nothing is refused then)."""
        cached = self._windows.get(id(self.provider))
        if cached and cached[0]:
            return cached[0]
        if self.provider.offline:
            return self.settings.llm_offline_context
        return self.settings.llm_context

    def message_limit(self) -> int | None:
        """Longest message the current model can take at all (`budget.message_chars_limit`)."""
        window = self.known_window()
        if window is None:
            return None
        return budgeting.message_chars_limit(
            window=window, reserved_output=self.settings.responder_max_tokens,
            chars_per_token=self.settings.chars_per_token,
            margin=self.settings.budget_safety_margin)

    def require_context(self, purpose: str, tokens: int) -> None:
        """Demand a minimum window for a purpose (`model_context_too_small` below it)."""
        self.min_context[purpose] = tokens

    async def test_connection(self, provider: str, url: str, model: str | None) -> dict[str, Any]:
        """Ask a server for its models and window, without switching to it."""
        candidate = self._build(provider, url, model)
        try:
            models = await candidate.list_models()
            if not candidate.model and models:
                candidate.model = models[0]
            window = await candidate.context_window()
        except ModelError as exc:
            return {"ok": False, "provider": provider, "url": url,
                    "error": {"code": exc.code, "message": exc.message}}
        return {"ok": True, "provider": provider, "url": url, "models": models,
                "model": candidate.model, "context_window": window}

    # --- calls -----------------------------------------------------------------------------

    async def complete(self, purpose: str, messages: Sequence[Message], *,
                       schema: type[msgspec.Struct] | None = None, max_tokens: int,
                       temperature: float = 0.7, user_id: str | None = None) -> Completion:
        """One model answer: text, or a validated `schema` instance in `.value`.
        `user_id`: whose call (the privacy gateway masks with that user's registry)."""
        _check_call(purpose, messages, max_tokens, temperature)
        await self.ready()
        provider = self.provider
        trace = Trace(purpose, provider.name, provider.model, stream=False)
        try:
            completion = await self._complete(provider, trace, purpose, messages, schema,
                                              max_tokens, temperature, user_id)
        except ModelError as exc:
            trace.finish("error", code=exc.code, error=exc.message)
            raise
        except asyncio.CancelledError:
            trace.finish("cancelled")
            raise
        except Exception as exc:
            trace.finish("error", code="internal_error", error=type(exc).__name__)
            raise
        else:
            trace.finish("ok")
            return completion
        finally:
            self._record(trace)

    async def _complete(self, provider: Provider, trace: Trace, purpose: str,
                        messages: Sequence[Message], schema: type[msgspec.Struct] | None,
                        max_tokens: int, temperature: float, user_id: str | None) -> Completion:
        masker, sent = await self._mask(messages, trace, user_id)
        call = Call(purpose, sent, max_tokens, temperature, schema,
                    json_schema(schema) if schema is not None else None)
        await self._plan(provider, call, trace)
        async with self._slot(provider):
            text, value, reply = await self._answer(provider, call, trace, masker, user_id)
        trace.model = reply.model or provider.model
        trace.finish_reason = reply.finish_reason
        self._debug_text(trace, call, text)
        return Completion(text=text, value=value,
                          usage=self._usage(provider, trace, call, text),
                          model=trace.model or provider.name, provider=provider.name,
                          duration_s=time.perf_counter() - trace.started, purpose=purpose,
                          finish_reason=reply.finish_reason)

    async def _answer(self, provider: Provider, call: Call, trace: Trace, masker: Masker | None,
                      user_id: str | None) -> tuple[str, msgspec.Struct | None, Reply]:
        """The reply's text and value; a masked call's reply checked and demasked, with one
        corrective retry when it carried a plaintext identity."""
        attempt = call
        while True:
            reply = await self._attempts(lambda: provider.complete(attempt), trace)
            trace.add_usage(reply.prompt_tokens, reply.completion_tokens)
            value = None
            if call.schema is not None:
                value, reply = await self._validated(provider, attempt, reply, trace)
            if masker is None:
                return reply.text, value, reply
            try:
                text, value = _demask(masker, reply.text, call.schema)
                return text, value, reply
            except ModelError as exc:
                if exc.code != "privacy_blocked":
                    raise
                attempt = self._privacy_retry(call, attempt, trace, user_id)

    def _privacy_retry(self, call: Call, attempt: Call, trace: Trace,
                       user_id: str | None) -> Call:
        """Count a blocked reply; the corrective call, or `privacy_blocked` after it."""
        counters = self.privacy_stats.of(user_id or "")
        counters.replies_blocked += 1
        if attempt is not call:
            counters.calls_blocked += 1
            log.warning("privacy: the reply carried a plaintext identity also after the "
                        "corrective retry; blocked", extra=logctx.fields(purpose=call.purpose))
            raise ModelError("privacy_blocked",
                             "the reply carried a plaintext identity, also after one "
                             "corrective retry; blocked, nothing of it is used")
        counters.retries += 1
        trace.privacy_retry = True
        log.warning("privacy: the reply carried a plaintext identity; one corrective retry",
                    extra=logctx.fields(purpose=call.purpose))
        corrected = Call(call.purpose, [*call.messages,
                                        {"role": "user", "content": PRIVACY_RETRY_PROMPT}],
                         call.max_tokens, call.temperature, call.schema, call.json_schema,
                         call.window)
        try:
            budgeting.plan(corrected.messages, window=call.window or 0,
                           max_tokens=call.max_tokens,
                           chars_per_token=self.settings.chars_per_token,
                           margin=self.settings.budget_safety_margin)
        except ModelError:
            counters.calls_blocked += 1
            raise ModelError("privacy_blocked", "the reply carried a plaintext identity and "
                             "the corrective retry does not fit the window; blocked") from None
        return corrected

    async def _validated(self, provider: Provider, call: Call, reply: Reply,
                         trace: Trace) -> tuple[msgspec.Struct, Reply]:
        assert call.schema is not None
        try:
            return decode(reply.text, call.schema), reply
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            first_error = str(exc)
        log.warning("structured output invalid; one repair retry", extra=logctx.fields(
            purpose=call.purpose, provider=provider.name, error=first_error))
        trace.repaired = True
        repair = Call(call.purpose, [*call.messages,
                                     {"role": "assistant", "content": reply.text},
                                     {"role": "user",
                                      "content": REPAIR_PROMPT.format(error=first_error)}],
                      call.max_tokens, call.temperature, call.schema, call.json_schema,
                      call.window)
        try:
            budgeting.plan(repair.messages, window=call.window or 0, max_tokens=call.max_tokens,
                           chars_per_token=self.settings.chars_per_token,
                           margin=self.settings.budget_safety_margin)
        except ModelError as exc:
            raise ModelError("model_bad_output", f"invalid structured output ({first_error}); "
                             f"the repair retry does not fit: {exc.message}") from None
        second = await self._attempts(lambda: provider.complete(repair), trace)
        trace.add_usage(second.prompt_tokens, second.completion_tokens)
        try:
            return decode(second.text, call.schema), second
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise ModelError("model_bad_output",
                             f"invalid structured output, also after the one repair retry: "
                             f"{exc}") from None

    def stream(self, purpose: str, messages: Sequence[Message], *, max_tokens: int,
               temperature: float = 0.7, user_id: str | None = None) -> TextStream:
        """Text deltas of one answer: `async for delta in gateway.stream(…)`.

        Retries happen only before the first delta. Stop early with `await stream.aclose()`
        (or `async with contextlib.aclosing(...)`) to end the HTTP request at once; after
        the end, `stream.completion` holds the whole answer with usage.
        """
        _check_call(purpose, messages, max_tokens, temperature)
        result = TextStream()
        result._generator = self._stream(result, purpose, messages, max_tokens, temperature,
                                         user_id)
        return result

    async def _stream(self, result: TextStream, purpose: str, messages: Sequence[Message],
                      max_tokens: int, temperature: float,
                      user_id: str | None) -> AsyncIterator[str]:
        await self.ready()
        provider = self.provider
        trace = Trace(purpose, provider.name, provider.model, stream=True)
        parts: list[str] = []
        try:
            masker, sent = await self._mask(messages, trace, user_id)
            call = attempt = Call(purpose, sent, max_tokens, temperature)
            await self._plan(provider, call, trace)
            async with self._slot(provider):
                while True:
                    unmasker = StreamUnmasker(masker) if masker is not None else None
                    try:
                        async with contextlib.aclosing(self._stream_attempts(
                                provider, attempt, trace, unmasker)) as pieces:
                            async for piece in pieces:
                                parts.append(piece)
                                yield piece
                        if unmasker is not None:
                            rest = unmasker.finish()
                            if rest:
                                parts.append(rest)
                                yield rest
                        break
                    except ModelError as exc:
                        # A leak before anything was shown gets the one corrective retry;
                        # once pieces are out, the stream can only stop.
                        if exc.code != "privacy_blocked" or unmasker is None or parts:
                            if exc.code == "privacy_blocked":
                                self.privacy_stats.of(user_id or "").calls_blocked += 1
                            raise
                        attempt = self._privacy_retry(call, attempt, trace, user_id)
        except ModelError as exc:
            trace.finish("error", code=exc.code, error=exc.message)
            raise
        except (asyncio.CancelledError, GeneratorExit):
            trace.finish("cancelled")
            raise
        except Exception as exc:
            trace.finish("error", code="internal_error", error=type(exc).__name__)
            raise
        else:
            trace.finish("ok")
            text = "".join(parts)
            self._debug_text(trace, call, text)
            result.completion = Completion(
                text=text, value=None, usage=self._usage(provider, trace, call, text),
                model=trace.model or provider.name, provider=provider.name,
                duration_s=trace.duration_ms / 1000 if trace.duration_ms else 0.0,
                purpose=purpose, finish_reason=trace.finish_reason)
        finally:
            self._record(trace)

    async def _stream_attempts(self, provider: Provider, call: Call, trace: Trace,
                               unmasker: StreamUnmasker | None) -> AsyncIterator[str]:
        first_try = time.monotonic()
        while True:
            trace.attempts += 1
            yielded = False
            try:
                async with contextlib.aclosing(provider.stream(call)) as chunks:
                    async for chunk in chunks:
                        if chunk.model:
                            trace.model = chunk.model
                        if chunk.finish_reason:
                            trace.finish_reason = chunk.finish_reason
                        trace.add_usage(chunk.prompt_tokens, chunk.completion_tokens)
                        piece = unmasker.feed(chunk.text) if unmasker and chunk.text else chunk.text
                        if piece:
                            yielded = True
                            yield piece
                return
            except ModelError as exc:
                delay = None if yielded else self._retry_delay(exc, trace.attempts, first_try)
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    # --- the steps -------------------------------------------------------------------------

    async def _mask(self, messages: Sequence[Message], trace: Trace,
                    user_id: str | None) -> tuple[Masker | None, list[Message]]:
        """For a remote provider: the masker of this call and the masked prompt."""
        if not self.remote:
            return None, list(messages)
        if user_id is None:
            # Fail closed: without the user, their registered people cannot be masked.
            raise ModelError("privacy_blocked", "a call to a remote provider needs the user "
                             "whose people to mask (user_id); nothing was sent")
        registered = (await self.identities.index(user_id) if self.identities is not None
                      else NameIndex(()))
        proposed = await self._names_from_local_model(messages)
        if proposed:
            registered = NameIndex([*registered.terms, *proposed])
        masker = Masker(registered)
        masked = masker.mask_messages(messages)
        trace.masked = masker.masked_count
        self.privacy_stats.masked(user_id, masker.counts)
        return masker, masked

    async def _names_from_local_model(self, messages: Sequence[Message]) -> list[str]:
        """The detect role's further names; none when it is off or fails (then the
        detectors mask alone — the local model adds, it does not gate)."""
        if self.name_detector is None:
            return []
        try:
            reply = await self.name_detector.complete(local_model.detect_call(list(messages)))
            return local_model.proposed_names(reply.text, list(messages))
        except (ModelError, msgspec.ValidationError, msgspec.DecodeError) as exc:
            log.warning("privacy detect role failed; the detectors mask alone",
                        extra=logctx.fields(error=getattr(exc, "code", type(exc).__name__)))
            return []

    async def _plan(self, provider: Provider, call: Call, trace: Trace) -> None:
        """Window, minimum window and budget — all before any network call of the answer."""
        window, source = await self._window(provider)
        trace.model = provider.model
        minimum = self.min_context.get(call.purpose)
        if minimum is not None and window < minimum:
            raise ModelError("model_context_too_small",
                             f"purpose {call.purpose} needs a window of {minimum} tokens; "
                             f"{provider.name} has {window} ({source})")
        try:
            budget = budgeting.plan(call.messages, window=window, max_tokens=call.max_tokens,
                                    chars_per_token=self.settings.chars_per_token,
                                    margin=self.settings.budget_safety_margin)
        except ModelError as exc:
            log.warning("prompt budget exceeded", extra=logctx.fields(
                purpose=call.purpose, window=window, max_tokens=call.max_tokens,
                budget_safety_margin=self.settings.budget_safety_margin, error=exc.message))
            raise
        trace.set_budget(budget, source)
        call.window = window

    async def _window(self, provider: Provider) -> tuple[int, str]:
        """The context window and where it came from: provider, cache, stale, setting.

        What the provider said is cached for `model_metadata_ttl`, also when it said nothing
        (a server that does not state its window is not asked again on every call).
        """
        key = id(provider)
        cached = self._windows.get(key)
        if cached and self._fresh(cached):
            return self._cached_window(provider, cached[0])
        lock = self._window_locks.setdefault(key, asyncio.Lock())
        async with lock:
            cached = self._windows.get(key)
            if cached and self._fresh(cached):
                return self._cached_window(provider, cached[0])
            try:
                window = await provider.context_window()
            except ModelError as exc:
                if cached and cached[0]:
                    log.warning("model metadata unavailable; the stale cached window serves",
                                extra=logctx.fields(provider=provider.name, window=cached[0],
                                                    error=exc.code))
                    return cached[0], "stale"
                return self._window_fallback(provider, f"{exc.code}: {exc.message}")
            self._windows[key] = (window or None, time.monotonic())
            if window:
                return window, "provider"
            return self._window_fallback(provider, "the provider does not state it")

    def _fresh(self, cached: tuple[int | None, float]) -> bool:
        return time.monotonic() - cached[1] < self.settings.model_metadata_ttl

    def _cached_window(self, provider: Provider, window: int | None) -> tuple[int, str]:
        if window:
            return window, "cache"
        return self._window_fallback(provider, "the provider does not state it")

    def _window_fallback(self, provider: Provider, why: str) -> tuple[int, str]:
        if self.settings.llm_context:
            return self.settings.llm_context, "setting"
        raise ModelError("model_metadata_unknown",
                         f"context window of {provider.name} unknown ({why}) and llm_context "
                         f"(NOVABERG_LLM_CONTEXT) is not set")

    def _slot(self, provider: Provider) -> asyncio.Semaphore:
        slot = self._slots.get(id(provider))
        if slot is None:
            slot = self._slots[id(provider)] = asyncio.Semaphore(self.settings.model_concurrency)
        return slot

    async def _attempts(self, attempt: Callable[[], Awaitable[T]], trace: Trace) -> T:
        """Run one provider attempt with the retry policy."""
        first_try = time.monotonic()
        while True:
            trace.attempts += 1
            try:
                return await attempt()
            except ModelError as exc:
                delay = self._retry_delay(exc, trace.attempts, first_try)
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    def _retry_delay(self, exc: ModelError, attempts: int, first_try: float) -> float | None:
        """Seconds to wait before the next attempt, or None to give up (and why, logged)."""
        settings = self.settings
        if not exc.retryable:
            return None
        if attempts > settings.model_retries:
            log.warning("model call failed after all retries", extra=logctx.fields(
                error=exc.code, attempts=attempts, model_retries=settings.model_retries))
            return None
        delay = settings.model_backoff_seconds * 2 ** (attempts - 1)
        delay += random.uniform(0, delay / 2)  # jitter: parallel callers do not align
        if exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        elapsed = time.monotonic() - first_try
        if elapsed + delay > settings.model_retry_max_seconds:
            log.warning("model call gives up: the next retry would pass the retry budget",
                        extra=logctx.fields(
                            error=exc.code, delay=round(delay, 3),
                            model_retry_max_seconds=settings.model_retry_max_seconds))
            return None
        log.info("model call retry", extra=logctx.fields(error=exc.code, attempt=attempts,
                                                         delay=round(delay, 3)))
        return delay

    def _usage(self, provider: Provider, trace: Trace, call: Call, text: str) -> Usage:
        if trace.prompt_tokens is not None and trace.completion_tokens is not None \
                and not provider.offline:
            return Usage(trace.prompt_tokens, trace.completion_tokens)
        estimate = budgeting.estimate_tokens
        cpt = self.settings.chars_per_token
        usage = Usage(trace.prompt_tokens if trace.prompt_tokens is not None
                      else estimate(call.messages, cpt),
                      trace.completion_tokens if trace.completion_tokens is not None
                      else estimate([{"role": "assistant", "content": text}], cpt),
                      estimated=True)
        trace.prompt_tokens, trace.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        trace.tokens_estimated = True
        return usage

    def _record(self, trace: Trace) -> None:
        self.traces.add(trace)
        level = logging.INFO if trace.outcome in ("ok", "cancelled") else logging.WARNING
        log.log(level, "model call", extra=logctx.fields(**trace.log_fields()))

    def _debug_text(self, trace: Trace, call: Call, answer: str) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("model call text", extra=logctx.fields(
                purpose=trace.purpose, prompt=call.messages, answer=answer))


class TextStream:
    """What `Gateway.stream` returns: an async iterator of text deltas."""

    def __init__(self) -> None:
        self._generator: AsyncIterator[str] | None = None
        self.completion: Completion | None = None

    def __aiter__(self) -> TextStream:
        return self

    async def __anext__(self) -> str:
        assert self._generator is not None
        return await self._generator.__anext__()

    async def aclose(self) -> None:
        if self._generator is not None:
            await self._generator.aclose()  # type: ignore[attr-defined]


def _demask(masker: Masker, text: str,
            schema: type[msgspec.Struct] | None) -> tuple[str, msgspec.Struct | None]:
    """Block a reply with a plaintext identity, else put the originals back."""
    masker.check(text)
    text = masker.unmask(text, json_string=schema is not None)
    if schema is None:
        return text, None
    try:
        return text, decode(text, schema)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise ModelError("model_bad_output",
                         f"structured output invalid once demasked: {exc}") from None


def _check_call(purpose: str, messages: Sequence[Message], max_tokens: int,
                temperature: float) -> None:
    """A call that breaks the interface is a bug in the caller: ValueError, not ModelError."""
    if not isinstance(purpose, str) or not purpose:
        raise ValueError("purpose must be a non-empty string")
    if not messages:
        raise ValueError("messages must not be empty")
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES \
                or not isinstance(message.get("content"), str):
            shape = sorted(message) if isinstance(message, dict) else type(message).__name__
            raise ValueError(f"a message must be {{'role': one of {sorted(ROLES)}, "
                             f"'content': str}}; got {shape}")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError(f"max_tokens must be a positive int, got {max_tokens!r}")
    if not 0.0 <= temperature <= 2.0:
        raise ValueError(f"temperature must be within [0, 2], got {temperature!r}")


def is_local(url: str | None) -> bool:
    """Is the server on this machine or the local network? Anything else counts as remote,
    so the privacy gateway fails closed."""
    host = (urlsplit(url or "").hostname or "").lower()
    if host in _LOCAL_HOSTS or host.endswith(_LOCAL_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local
