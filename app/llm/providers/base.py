"""What every provider is, and the HTTP plumbing the networked ones share.

A provider makes ONE attempt per call and maps every failure to a `ModelError`; retries,
budget, concurrency, privacy and tracing are the gateway's — but the body a call sends is
built here, so here it passes the call's privacy egress gate (`request_body`) before it is sent.

A provider is remote when it is marked so (`llm_remote`) or its host is off this network
(`app.llm.detect.is_local`); the gateway masks a remote provider's prompts. Only with the
test setting `llm_test_purpose_header` does a call carry its purpose in the header
`X-Novaberg-Purpose` (the fake model of tests/fakemodel.py scripts replies by it), and never
to a remote provider: what a call is for is nobody's business off this machine.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from email.utils import parsedate_to_datetime
from typing import Any, ClassVar

import aiohttp
import msgspec

from app.core.settings import Settings
from app.llm.detect import is_local
from app.llm.errors import ModelError
from app.llm.types import Call, Chunk, Reply

PURPOSE_HEADER = "X-Novaberg-Purpose"
Gate = Callable[[bytes], Awaitable[None]]

_CONTEXT_LENGTH = re.compile(
    r"context[ _-]?(?:length|window|size)|maximum context|too many tokens|"
    r"exceeds? (?:the )?(?:context|maximum|model)|prompt is too long|input is too long|"
    r"requested tokens .* exceed|n_ctx",
    re.IGNORECASE,
)


class Provider(ABC):
    """One model backend. Subclasses register in `app.llm.providers.PROVIDERS`."""

    name: ClassVar[str]
    offline: ClassVar[bool] = False

    def __init__(
        self,
        *,
        settings: Settings,
        session: aiohttp.ClientSession | None,
        url: str | None,
        model: str | None,
        api_key: str | None,
        remote: bool = False,
    ) -> None:
        """`remote`: marked remote (`llm_remote`) even where its host is local."""
        self.settings = settings
        self.session = session
        self.url = url.rstrip("/") if url else None
        self.model = model
        self._api_key = api_key
        self.remote = not self.offline and (remote or not is_local(self.url))
        self._sends_purpose = settings.llm_test_purpose_header and not self.remote

    @abstractmethod
    async def context_window(self) -> int | None:
        """The window the provider states (None: it does not say). Network errors raise."""

    @abstractmethod
    async def list_models(self) -> list[str]:
        """Model names the provider offers."""

    async def count_tokens(self, text: str) -> int | None:
        """Tokens of `text` by the server's own tokenizer (None: the server offers none).
        Network errors raise. The default: no tokenizer (Ollama's API has none)."""
        return None

    async def parallel_slots(self) -> int | None:
        """How many requests the server serves at once, as it states it (None: it does not
        say). The default: it does not (Ollama's `OLLAMA_NUM_PARALLEL` and vLLM's
        `max_num_seqs` are in no answer of theirs)."""
        return None

    @abstractmethod
    async def complete(self, call: Call) -> Reply:
        """One non-streaming attempt."""

    @abstractmethod
    def stream(self, call: Call) -> AsyncGenerator[Chunk, None]:
        """One streaming attempt: text deltas, the last chunk with usage when known."""

    # --- shared HTTP plumbing ------------------------------------------------------------

    def headers(self, purpose: str | None = None) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if purpose and self._sends_purpose:
            headers[PURPOSE_HEADER] = purpose
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _session(self) -> aiohttp.ClientSession:
        if self.session is None:
            raise RuntimeError(f"provider {self.name} has no HTTP session")
        return self.session

    def _endpoint(self, path: str) -> str:
        if self.url is None:
            raise RuntimeError(f"provider {self.name} has no URL")
        return self.url + path

    async def get_json(self, path: str, *, timeout: float | None = None) -> Any:
        """GET a JSON document (metadata, model lists). Errors map like a call's."""
        return await self._json_exchange("GET", path, None, self.headers(), timeout)

    async def post_json(
        self,
        path: str,
        payload: dict[str, Any],
        purpose: str,
        *,
        timeout: float | None = None,
        gate: Gate | None = None,
    ) -> Any:
        """POST a JSON request and read the whole JSON answer, within `model_timeout`.
        `gate`: the privacy egress gate the encoded body passes first (a call's `gate`)."""
        return await self._json_exchange(
            "POST", path, await request_body(payload, gate), self.headers(purpose), timeout
        )

    async def _json_exchange(
        self,
        method: str,
        path: str,
        data: bytes | None,
        headers: dict[str, str],
        timeout: float | None,
    ) -> Any:
        seconds = timeout if timeout is not None else self.settings.model_timeout
        try:
            async with self._session().request(
                method,
                self._endpoint(path),
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=seconds),
            ) as response:
                body = await response.read()
                await raise_for_status(response, body)
                return decode_envelope(body)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise connection_error(exc, seconds) from exc

    @asynccontextmanager
    async def open_stream(
        self, path: str, payload: dict[str, Any], purpose: str, gate: Gate | None = None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """POST a streaming request; `model_timeout` bounds the wait for each piece. `gate`:
        as for `post_json`.

        Leaving the block (also by cancellation) closes the response, and with it the
        connection: the server sees the client go.
        """
        seconds = self.settings.model_timeout
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=seconds, sock_read=seconds)
        data = await request_body(payload, gate)
        try:
            async with self._session().post(
                self._endpoint(path), data=data, headers=self.headers(purpose), timeout=timeout
            ) as response:
                if response.status >= 400:
                    await raise_for_status(response, await response.read())
                try:
                    yield response
                except BaseException:
                    response.close()  # do not hand a half-read connection back to the pool
                    raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise connection_error(exc, seconds) from exc


async def request_body(payload: dict[str, Any], gate: Gate | None) -> bytes:
    """The request body as it is sent; a remote call's passes its privacy gate first (which
    refuses it with `privacy_blocked` when a registered name is in it)."""
    data = msgspec.json.encode(payload)
    if gate is not None:
        await gate(data)
    return data


async def lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The non-empty lines of a streamed body (NDJSON or SSE)."""
    async for raw in response.content:
        line = raw.strip()
        if line:
            yield line


def decode_envelope(body: bytes) -> Any:
    """The server's JSON envelope; anything else is `model_bad_response`."""
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise ModelError(
            "model_bad_response", f"the server answered {len(body)} bytes that are not JSON"
        ) from None


def connection_error(exc: BaseException, seconds: float) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ModelError(
            "model_unavailable", f"could not connect within {seconds} s", retryable=True
        )
    if isinstance(exc, TimeoutError):
        return ModelError("model_timeout", f"no answer within model_timeout {seconds} s")
    return ModelError("model_unavailable", f"{type(exc).__name__}: {exc}", retryable=True)


async def raise_for_status(response: aiohttp.ClientResponse, body: bytes) -> None:
    """Map an HTTP error answer to a `ModelError` (nothing for 2xx/3xx)."""
    status = response.status
    if status < 400:
        return
    detail = error_detail(body)
    where = f"HTTP {status} from {response.url.with_query(None)}"
    if status == 429:
        raise ModelError(
            "rate_limited",
            f"{where}: {detail}",
            retryable=True,
            status=status,
            retry_after=retry_after(response.headers.get("Retry-After")),
        )
    if _CONTEXT_LENGTH.search(detail) and status in (400, 413, 422, 500):
        raise ModelError("provider_context_length_rejected", f"{where}: {detail}", status=status)
    if status >= 500:
        raise ModelError("model_http_error", f"{where}: {detail}", retryable=True, status=status)
    if status in (401, 403):
        raise ModelError("model_auth_failed", f"{where}: check llm_api_key", status=status)
    if status == 404:
        raise ModelError("model_not_found", f"{where}: {detail}", status=status)
    raise ModelError("model_http_error", f"{where}: {detail}", status=status)


def error_detail(body: bytes) -> str:
    """The server's error message (OpenAI `{"error": {"message"}}`, Ollama `{"error"}`)."""
    try:
        data = msgspec.json.decode(body)
    except msgspec.DecodeError:
        # A proxy's HTML error page, not user text: the first bytes name the problem, and a
        # megabyte of markup does not belong in a log line.
        return body[:300].decode("utf-8", "replace").strip() or "(empty body)"
    return describe_error(data)


def describe_error(data: Any) -> str:
    if isinstance(data, dict):
        error = data.get("error", data.get("detail", data))
        if isinstance(error, dict):
            parts = [str(error.get(k)) for k in ("code", "type", "message") if error.get(k)]
            return " ".join(parts) or str(error)
        return str(error)
    return str(data)


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def context_length_error(data: Any) -> ModelError | None:
    """A `ModelError` for an error object inside a stream, context-length aware."""
    detail = describe_error(data)
    if _CONTEXT_LENGTH.search(detail):
        return ModelError("provider_context_length_rejected", detail)
    return None
