"""The model gateway: every model call of the product goes through `Gateway` (design §7).

    result = await gateway.complete("perception", messages, schema=Perception, max_tokens=400,
                                    user_id=user_id)
    async for delta in gateway.stream("responder", messages, max_tokens=600, user_id=...): ...

`user_id` names whose call it is: for a remote provider the prompt is masked with that
user's identity registry, and a remote call without it is refused (`privacy_blocked`,
nothing is sent) — fail closed.

One call, in order (each step's module says the details):
1. privacy: for a remote provider the whole prompt is masked with the detectors and the
   user's registered people (`app.llm.guard` over `app.llm.privacy`), and the call gets its
   egress gate: the provider's final request body (of every attempt: retries, the repair
   and the corrective one too) must hold no registered name in the normalised view, or the
   call is refused with `privacy_blocked` and nothing is sent (`app.llm.privacy.egress`);
2. budget: the context window (provider, cached `model_metadata_ttl`; a stale cache serves
   while the provider is down; else `llm_context`; else `model_metadata_unknown`), the
   purpose's minimum window, then `app.llm.budget` — all before any network call
   (`app.llm.window`);
3. a slot of the provider's concurrency limit: the server's slots (llama.cpp's `/props`
   `total_slots`), else `model_concurrency` (`app.llm.slots`; `parallel()` tells the pipeline);
4. the provider call with the per-call timeout and bounded retries (connection errors, 5xx,
   429 with Retry-After; exponential backoff with jitter, at most `model_retries` retries
   within `model_retry_max_seconds`; `app.llm.retry`);
5. structured output: decode and validate with msgspec; invalid output gets exactly one
   repair retry that shows the model the validation error, then `model_bad_output`
   (`app.llm.retry`);
6. privacy: a reply with a plaintext identity is blocked before demasking; one corrective
   retry (the same prompt and a reminder to use the placeholders), then `privacy_blocked`;
   else the reply is demasked (`app.llm.guard`);
7. trace: one record in the ring and one log line, whatever the outcome; a call to an
   endpoint (not the offline model) is also noted for the user's egress log
   (`app.llm.egress_log`: counts and the endpoint's host, never text), written off the path.

The provider in use: the one the model choice names (`app.llm.choice`: at start the
settings', later the UI's, `switch`), else auto-detection's (`app.llm.detect`). The gateway
owns the choice; its settings stay the settings in force at start.

The task model (issue 36 item 4, as Open WebUI's): with `llm_task_model` chosen, the task
purposes (`task_purposes`, the product's in `app.wiring.purposes`: its structured calls) go
to a second provider of the same kind — that model on `llm_task_url`, else on the main
server — and everything else (the reply's stream, every free text) to the main one.
`provider_for(purpose)` is the one place that picks. Each provider is an endpoint like any
other: its own window, slots and remote flag, so a task server off this network gets the
same masking, egress gate and egress log row as a remote main one (steps 1–7 take the
provider of the call). The trace and the egress row name the model the call used.

Cancelling the caller cancels the HTTP request; the server sees the connection close.

One module: one class, `Gateway`; the steps of a call live in their own modules (window, retry,
guard, providers).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncGenerator, Callable, Collection, Mapping, Sequence
from typing import Any

import aiohttp
import msgspec

from app.core import log as logctx
from app.core.settings import Settings
from app.core.text import without_nul
from app.llm import detect
from app.llm.choice import ModelChoice
from app.llm.egress_log import EgressCall, endpoint_of
from app.llm.errors import ModelError
from app.llm.guard import PrivacyGuard, demask
from app.llm.offline.handlers import BASE_ANSWERS, Answers, DayMemory
from app.llm.privacy import (
    EgressGate,
    EgressRefused,
    IdentityRegistry,
    Masker,
    PrivacyStats,
    StreamUnmasker,
)
from app.llm.privacy import warm_up as warm_up_privacy
from app.llm.providers import PROVIDERS, Provider
from app.llm.providers.offline import OfflineProvider
from app.llm.retry import Retries
from app.llm.schema import json_schema
from app.llm.slots import ServerSlots
from app.llm.trace import Trace, TraceRing
from app.llm.types import Call, Completion, Message, Reply, TextStream, Usage, check_call
from app.llm.views import (
    ConfiguredModel,
    ConnectionFault,
    ConnectionResult,
    GatewayView,
    ModelInfo,
    TaskModelView,
)
from app.llm.window import ContextWindows

log = logging.getLogger(__name__)


class Gateway:
    """The one way to a model. Create with `Gateway(settings)`, then `await start()`
    (or `async with Gateway(settings) as gateway:`), and `await aclose()` at the end.

    `offline_answers`: what the offline provider answers per purpose (the product's are
    composed in `app.wiring.purposes`; without them, the provider's own base answers);
    `task_purposes`: the purposes a task model answers when one is chosen (the product's:
    `app.wiring.purposes.TASK_PURPOSES`; none: the main model answers all);
    `offline_memory`: where it keeps what it said to a pair today (none: nothing beyond
    the prompt); `egress`: where each call to an endpoint is noted for the user's log of
    what left this machine (`EgressLog.note`; none: not logged)."""

    def __init__(
        self,
        settings: Settings,
        identities: IdentityRegistry | None = None,
        *,
        offline_answers: Answers = BASE_ANSWERS,
        offline_memory: DayMemory | None = None,
        egress: Callable[[EgressCall], None] | None = None,
        task_purposes: Collection[str] = (),
    ) -> None:
        self.settings = settings
        self.choice = ModelChoice.of(settings)
        self.session: aiohttp.ClientSession | None = None
        # This gateway's provider classes: the table's, with its own offline answers.
        self._providers: Mapping[str, Callable[..., Provider]] = {
            **PROVIDERS,
            "offline": functools.partial(
                OfflineProvider, answers=offline_answers, memory=offline_memory
            ),
        }
        self.provider: Provider = self._build("offline", None, None)
        # The task model's provider (None: no task model, or the main one is offline).
        self.task_provider: Provider | None = None
        self.task_purposes = frozenset(task_purposes)
        self.detected: list[detect.Detected] = []
        self.traces = TraceRing(settings.llm_trace_size)
        self.windows = ContextWindows(settings)
        self.retries = Retries(settings)
        self.privacy = PrivacyGuard(settings, identities, egress)
        self.slots = ServerSlots(settings)
        # provider id -> (its slots when built, the semaphore of that many)
        self._slots: dict[int, tuple[int, asyncio.Semaphore]] = {}
        self._detection: asyncio.Task[None] | None = None
        self._egress = egress

    @property
    def remote(self) -> bool:
        """Does the main provider in use leave this network (its prompts are masked)? The
        task model's provider says so for itself (`task_provider.remote`)."""
        return self.provider.remote

    def provider_for(self, purpose: str) -> Provider:
        """The provider a purpose's call goes to: the task model's for a task purpose when
        one is in use, else the main one. The one place that picks."""
        if self.task_provider is not None and purpose in self.task_purposes:
            return self.task_provider
        return self.provider

    @property
    def auto_detect(self) -> bool:
        """No provider chosen: auto-detection's finding is used (it runs at start)."""
        return self.choice.llm_provider is None

    @property
    def privacy_stats(self) -> PrivacyStats:
        return self.privacy.stats

    @property
    def name_detector(self) -> Provider | None:
        return self.privacy.name_detector

    # --- life cycle ------------------------------------------------------------------------

    async def start(self) -> Gateway:
        """Open the HTTP session, build the configured provider, start auto-detection."""
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0)
        )
        choice = self.choice
        if choice.llm_provider is not None:
            self.use(choice.llm_provider, choice.llm_url, choice.llm_model)
            log.info(
                "model provider configured",
                extra=logctx.fields(**msgspec.structs.asdict(self.info())),
            )
        else:
            self._detection = asyncio.create_task(self._detect(), name="llm-detect")
        task = self.task_provider
        if choice.llm_remote or (task is not None and task.remote):
            await asyncio.to_thread(warm_up_privacy)  # the first masked call need not wait
        self.privacy.start_name_detector(self.session)
        return self

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
            url = self.default_url(provider)
        self.provider = self._build(provider, url, model)
        self.task_provider = self._task(self.provider)

    def _task(self, main: Provider) -> Provider | None:
        """The task model's provider beside `main`: the chosen task model on its server (the
        main one unless `llm_task_url` names another), of main's kind; None without one or
        while main is the offline model."""
        choice = self.choice
        if main.offline or choice.llm_task_model is None:
            return None
        return self._build(main.name, choice.llm_task_url or main.url, choice.llm_task_model)

    def default_url(self, provider: str) -> str | None:
        """Where a provider is used when no URL is given (also by a connection test): the
        address auto-detection looks at (`llm_probe_ollama_url`, `llm_probe_openai_url`)."""
        return {
            "ollama": self.settings.llm_probe_ollama_url,
            "openai": self.settings.llm_probe_openai_url,
        }.get(provider)

    def _build(self, name: str, url: str | None, model: str | None) -> Provider:
        # The API key goes only to the chosen server (also the task model's on it), never to
        # a probed or tested one; a provider keeps its URL without the trailing slash.
        choice = self.choice
        chosen = url is not None and url.rstrip("/") == (choice.llm_url or "").rstrip("/")
        key = choice.llm_api_key if url and chosen else None
        return self._providers[name](
            settings=self.settings,
            session=self.session,
            url=url,
            model=model,
            api_key=key,
            remote=choice.llm_remote,
        )

    async def _detect(self) -> None:
        assert self.session is not None
        self.detected = await detect.probe(self.session, self.settings)
        chosen = detect.choose(self.detected)
        if chosen is not None:
            model = self.choice.llm_model or chosen.models[0]
            self.use(chosen.provider, chosen.url, model)
        log.info(
            "model provider detected" if chosen else "no model server found; offline",
            extra=logctx.fields(
                **msgspec.structs.asdict(self.info()), found=[d.as_dict() for d in self.detected]
            ),
        )

    async def switch(self, **changes: Any) -> None:
        """Use the model the UI chose from now on, without a restart: the choice with
        `changes`, by setting name (`ModelChoice.changed`: `ValueError` for another setting,
        `SettingsError` for a bad value, and nothing changes). The settings are not touched.
        A running auto-detection finishes first, so it cannot switch back after; from then on
        it no longer overrides the choice."""
        choice = self.choice.changed(**changes)
        await self.ready()
        self.choice = choice
        # No provider (Offline chosen in the UI): offline now, auto-detection at the next start.
        if choice.llm_provider in (None, "offline"):
            self.use("offline", None, None)
        else:
            self.use(choice.llm_provider, choice.llm_url, choice.llm_model)

    async def ready(self) -> None:
        """Wait for auto-detection (bounded by `llm_probe_timeout`)."""
        if self._detection is not None and not self._detection.done():
            await asyncio.shield(self._detection)

    # --- what it is ------------------------------------------------------------------------

    @property
    def endpoint(self) -> str | None:
        """The model server the provider in use talks to (its base URL): what the runtime's
        run slots belong to. None for the offline model (it runs in this process)."""
        return None if self.provider.offline else self.provider.url

    def info(self) -> ModelInfo:
        """The model in use — for /api/health, the UI and the journal's trace; `task_model`:
        the task model in use (None: the main model answers every call)."""
        task = self.task_provider
        return ModelInfo(
            self.provider.name,
            self.provider.model,
            self.provider.offline,
            task.model if task is not None else None,
        )

    def _task_described(self) -> TaskModelView | None:
        task = self.task_provider
        if task is None:
            return None
        return TaskModelView(
            model=task.model,
            url=task.url,
            remote=task.remote,
            context_window=self.windows.cached(task),
            purposes=sorted(self.task_purposes),
        )

    def describe(self) -> GatewayView:
        """Everything the settings panel shows (`GET /api/llm`); no secrets."""
        info = self.info()
        return GatewayView(
            provider=info.provider,
            model=info.model,
            offline=info.offline,
            task_model=info.task_model,
            url=self.provider.url,
            remote=self.remote,
            auto_detect=self.auto_detect,
            detecting=self._detection is not None and not self._detection.done(),
            detected=list(self.detected),
            context_window=self.windows.cached(self.provider),
            task=self._task_described(),
            concurrency=self.slots.known(self.provider),
            api_key="set" if self.choice.llm_api_key else None,
            message_limit=self.message_limit(),
            default_urls={name: self.default_url(name) for name in ("ollama", "openai")},
            # Shown by the settings panel also while the offline model runs instead.
            configured=ConfiguredModel(
                self.choice.llm_provider,
                self.choice.llm_url,
                self.choice.llm_model,
                self.choice.llm_task_model,
                self.choice.llm_task_url,
            ),
        )

    async def context_window(self, *purposes: str) -> tuple[int, str]:
        """The window and where it came from (as a call would budget it) of the providers
        `purposes` go to — the smallest, when a task model takes some of them; no purposes:
        the main provider's. `model_metadata_unknown` when nobody says. For callers that
        must plan a whole job before its first call (the journal)."""
        await self.ready()
        providers = {id(p): p for p in map(self.provider_for, purposes)} or {0: self.provider}
        windows = [await self.windows.window(p) for p in providers.values()]
        return min(windows, key=lambda found: found[0])

    def _in_use(self) -> list[Provider]:
        """The providers a turn's calls go to: the main one, and the task model's if any."""
        return [self.provider] + ([self.task_provider] if self.task_provider else [])

    async def parallel(self, *purposes: str) -> int:
        """How many calls of `purposes` the model server(s) they go to serve at once
        (`app.llm.slots`; the fewest, when a task model takes some of them; no purposes:
        the main server's): calls that do not depend on each other run at once only where
        this is more than one."""
        await self.ready()
        providers = {id(p): p for p in map(self.provider_for, purposes)} or {0: self.provider}
        return min([await self.slots.of(p) for p in providers.values()])

    def known_window(self) -> int | None:
        """The current models' window as far as known without asking them (cache, offline
        provider, `llm_context`) — the smaller, with a task model (a message goes to both);
        None when unknown (nothing is refused then)."""
        known = [w for w in map(self.windows.known, self._in_use()) if w is not None]
        return min(known, default=None)

    def message_limit(self) -> int | None:
        """Longest message the current models can take at all (`budget.message_chars_limit`;
        the smaller limit, with a task model)."""
        limits = [n for n in map(self.windows.message_limit, self._in_use()) if n is not None]
        return min(limits, default=None)

    def require_context(self, purpose: str, tokens: int) -> None:
        """Demand a minimum window for a purpose (`model_context_too_small` below it)."""
        self.windows.min_context[purpose] = tokens

    async def test_connection(self, provider: str, url: str, model: str | None) -> ConnectionResult:
        """Ask a server for its models and window, without switching to it."""
        candidate = self._build(provider, url, model)
        try:
            models = await candidate.list_models()
            if not candidate.model and models:
                candidate.model = models[0]
            window = await candidate.context_window()
        except ModelError as exc:
            return ConnectionResult(
                ok=False, provider=provider, url=url, error=ConnectionFault(exc.code, exc.message)
            )
        return ConnectionResult(
            ok=True,
            provider=provider,
            url=url,
            models=models,
            model=candidate.model,
            context_window=window,
        )

    # --- calls -----------------------------------------------------------------------------

    async def complete(
        self,
        purpose: str,
        messages: Sequence[Message],
        *,
        schema: type[msgspec.Struct] | None = None,
        max_tokens: int,
        temperature: float = 0.7,
        user_id: str | None = None,
    ) -> Completion:
        """One model answer: text, or a validated `schema` instance in `.value`.
        `user_id`: whose call (the privacy gateway masks with that user's registry)."""
        check_call(purpose, messages, max_tokens, temperature)
        await self.ready()
        provider = self.provider_for(purpose)
        trace = Trace(purpose, provider.name, provider.model, stream=False)
        try:
            completion = await self._complete(
                provider, trace, purpose, messages, schema, max_tokens, temperature, user_id
            )
        except BaseException as exc:
            self._fail(trace, exc)
            raise
        else:
            trace.finish("ok")
            return completion
        finally:
            self._record(trace, provider, user_id)

    async def _complete(
        self,
        provider: Provider,
        trace: Trace,
        purpose: str,
        messages: Sequence[Message],
        schema: type[msgspec.Struct] | None,
        max_tokens: int,
        temperature: float,
        user_id: str | None,
    ) -> Completion:
        masker, sent = await self._mask(provider, messages, trace, user_id)
        call = Call(
            purpose,
            sent,
            max_tokens,
            temperature,
            schema,
            json_schema(schema) if schema is not None else None,
            gate=self._gate(masker, user_id, purpose),
        )
        await self.windows.plan(provider, call, trace)
        async with await self._slot(provider):
            text, value, reply = await self._answer(provider, call, trace, masker, user_id)
        trace.model = reply.model or provider.model
        trace.finish_reason = reply.finish_reason
        self._debug_text(trace, call, text)
        return Completion(
            text=text,
            value=value,
            usage=self._usage(provider, trace, call, text),
            model=trace.model or provider.name,
            provider=provider.name,
            duration_s=time.perf_counter() - trace.started,
            purpose=purpose,
            finish_reason=reply.finish_reason,
        )

    async def _answer(
        self,
        provider: Provider,
        call: Call,
        trace: Trace,
        masker: Masker | None,
        user_id: str | None,
    ) -> tuple[str, msgspec.Struct | None, Reply]:
        """The reply's text and value; a masked call's reply checked and demasked, with one
        corrective retry when it carried a plaintext identity."""
        attempt = call
        while True:
            reply = await self.retries.run(functools.partial(provider.complete, attempt), trace)
            reply.text = without_nul(reply.text)
            trace.add_usage(reply.prompt_tokens, reply.completion_tokens)
            value = None
            if call.schema is not None:
                value, reply = await self.retries.validated(provider, attempt, reply, trace)
            if masker is None:
                return reply.text, value, reply
            try:
                text, value = demask(masker, reply.text, call.schema)
                return text, value, reply
            except ModelError as exc:
                if exc.code != "privacy_blocked":
                    raise
                attempt = self.privacy.retry(call, attempt, trace, user_id)

    def stream(
        self,
        purpose: str,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float = 0.7,
        user_id: str | None = None,
    ) -> TextStream:
        """Text deltas of one answer: `async for delta in gateway.stream(…)`.

        Retries happen only before the first delta. Stop early with `await stream.aclose()`
        (or `async with contextlib.aclosing(...)`) to end the HTTP request at once; after
        the end, `stream.completion` holds the whole answer with usage.
        """
        check_call(purpose, messages, max_tokens, temperature)
        result = TextStream()
        result._generator = self._stream(  # noqa: SLF001 - the gateway feeds its own TextStream
            result, purpose, messages, max_tokens, temperature, user_id
        )
        return result

    async def _stream(
        self,
        result: TextStream,
        purpose: str,
        messages: Sequence[Message],
        max_tokens: int,
        temperature: float,
        user_id: str | None,
    ) -> AsyncGenerator[str, None]:
        await self.ready()
        provider = self.provider_for(purpose)
        trace = Trace(purpose, provider.name, provider.model, stream=True)
        parts: list[str] = []
        try:
            masker, sent = await self._mask(provider, messages, trace, user_id)
            call = attempt = Call(
                purpose, sent, max_tokens, temperature, gate=self._gate(masker, user_id, purpose)
            )
            await self.windows.plan(provider, call, trace)
            async with await self._slot(provider):
                while True:
                    unmasker = StreamUnmasker(masker) if masker is not None else None
                    try:
                        async with contextlib.aclosing(
                            self.retries.stream(provider, attempt, trace, unmasker)
                        ) as pieces:
                            async for raw_piece in pieces:
                                if not (piece := without_nul(raw_piece)):
                                    continue
                                parts.append(piece)
                                yield piece
                        if unmasker is not None:
                            rest = without_nul(unmasker.finish())
                            if rest:
                                parts.append(rest)
                                yield rest
                        break
                    except ModelError as exc:
                        # A leak before anything was shown gets the one corrective retry;
                        # once pieces are out, the stream can only stop. A request the
                        # egress gate refused was never sent: no retry either.
                        if (
                            exc.code != "privacy_blocked"
                            or unmasker is None
                            or parts
                            or isinstance(exc, EgressRefused)
                        ):
                            if exc.code == "privacy_blocked" and not isinstance(
                                exc, EgressRefused
                            ):  # the gate counted its own
                                self.privacy_stats.of(user_id or "").calls_blocked += 1
                            raise
                        attempt = self.privacy.retry(call, attempt, trace, user_id)
        except BaseException as exc:
            self._fail(trace, exc)
            raise
        else:
            trace.finish("ok")
            text = "".join(parts)
            self._debug_text(trace, call, text)
            result.completion = Completion(
                text=text,
                value=None,
                usage=self._usage(provider, trace, call, text),
                model=trace.model or provider.name,
                provider=provider.name,
                duration_s=trace.duration_ms / 1000 if trace.duration_ms else 0.0,
                purpose=purpose,
                finish_reason=trace.finish_reason,
            )
        finally:
            self._record(trace, provider, user_id)

    # --- the steps -------------------------------------------------------------------------

    async def _mask(
        self, provider: Provider, messages: Sequence[Message], trace: Trace, user_id: str | None
    ) -> tuple[Masker | None, list[Message]]:
        """For a remote provider (the call's: main or task): the masker of this call and the
        masked prompt."""
        if not provider.remote:
            return None, list(messages)
        return await self.privacy.mask(messages, trace, user_id)

    def _gate(self, masker: Masker | None, user_id: str | None, purpose: str) -> EgressGate | None:
        """A masked call's egress gate (step 1's second half): the provider's final request
        body passes it before it is sent."""
        return self.privacy.gate(masker, user_id, purpose) if masker is not None else None

    async def _slot(self, provider: Provider) -> asyncio.Semaphore:
        """The provider's concurrency limit, as many as its server's slots. When they change
        (a restarted server) a new semaphore serves the calls from then on; those in flight
        finish on the old one."""
        count = await self.slots.of(provider)
        held = self._slots.get(id(provider))
        if held is None or held[0] != count:
            held = self._slots[id(provider)] = (count, asyncio.Semaphore(count))
        return held[1]

    def _usage(self, provider: Provider, trace: Trace, call: Call, text: str) -> Usage:
        # The offline provider's counts are estimates anyway: they are marked as such.
        return trace.usage(
            call.messages,
            text,
            reported=not provider.offline,
            chars_per_token=self.settings.chars_per_token,
        )

    @staticmethod
    def _fail(trace: Trace, exc: BaseException) -> None:
        """Finish the trace on `exc`; a privacy refusal says which check refused: the egress
        gate (nothing was sent; also a call refused before any attempt) or the reply check."""
        trace.fail(exc)
        if isinstance(exc, ModelError) and exc.code == "privacy_blocked":
            gate = isinstance(exc, EgressRefused) or trace.attempts == 0
            trace.refused = "gate" if gate else "reply"

    def _record(self, trace: Trace, provider: Provider, user_id: str | None) -> None:
        self.traces.add(trace)
        level = logging.INFO if trace.outcome in ("ok", "cancelled") else logging.WARNING
        log.log(level, "model call", extra=logctx.fields(**trace.log_fields()))
        if self._egress is not None and user_id is not None and not provider.offline:
            self._egress(self._egress_call(trace, provider, user_id))

    @staticmethod
    def _egress_call(trace: Trace, provider: Provider, user_id: str) -> EgressCall:
        """The call as the egress log keeps it: counts and the endpoint's host only."""
        return EgressCall(
            user_id=user_id,
            at=trace.at,
            purpose=trace.purpose,
            provider=provider.name,
            endpoint=endpoint_of(provider.url),
            model=trace.model or provider.model,
            remote=provider.remote,
            tokens_in=trace.prompt_tokens,
            tokens_out=trace.completion_tokens,
            masked=dict(trace.masked_kinds or {}),
            refused=trace.refused,
            outcome=trace.outcome,
            error_code=trace.error_code,
        )

    def _debug_text(self, trace: Trace, call: Call, answer: str) -> None:
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "model call text",
                extra=logctx.fields(purpose=trace.purpose, prompt=call.messages, answer=answer),
            )
