"""Auto-detection of a local model server (design §7, issue 3 §3).

With no provider configured the gateway starts offline and, in the background, asks
Ollama (`GET /api/tags` at `llm_probe_ollama_url`) and an OpenAI-style server (`GET
/v1/models` at `llm_probe_openai_url`) at once; both probes together take at most
`llm_probe_timeout` (300 ms). When `llm_url` is set, that URL is asked in both dialects
instead. Start-up never waits for this.

`is_local(url)` tells a server on this machine or the local network from a remote one (a
remote provider's prompts are masked, `app.llm.guard`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import msgspec

from app.core import log as logctx
from app.core.settings import Settings

log = logging.getLogger(__name__)

_LOCAL_HOSTS = ("localhost",)
_LOCAL_SUFFIXES = (".localhost", ".local", ".lan", ".home.arpa", ".internal")


@dataclass(frozen=True, slots=True)
class Detected:
    provider: str
    url: str
    models: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def candidates(settings: Settings) -> list[tuple[str, str, str]]:
    """(provider, base URL, path) pairs to ask, in order of preference."""
    ollama = settings.llm_url or settings.llm_probe_ollama_url
    openai = settings.llm_url or settings.llm_probe_openai_url
    return [
        ("ollama", ollama.rstrip("/"), "/api/tags"),
        ("openai", openai.rstrip("/").removesuffix("/v1"), "/v1/models"),
    ]


async def probe(session: aiohttp.ClientSession, settings: Settings) -> list[Detected]:
    """The servers that answered, in order of preference (Ollama first)."""
    asks = [_ask(session, provider, url, path) for provider, url, path in candidates(settings)]
    try:
        async with asyncio.timeout(settings.llm_probe_timeout):
            found = await asyncio.gather(*asks)
    except TimeoutError:
        log.info(
            "model server probe timed out",
            extra=logctx.fields(llm_probe_timeout=settings.llm_probe_timeout),
        )
        return []
    return [d for d in found if d is not None]


async def _ask(
    session: aiohttp.ClientSession, provider: str, url: str, path: str
) -> Detected | None:
    try:
        async with session.get(url + path) as response:
            if response.status != 200:
                return None
            data = msgspec.json.decode(await response.read())
    except (aiohttp.ClientError, msgspec.DecodeError, OSError):
        return None
    if not isinstance(data, dict):
        return None
    if provider == "ollama":
        entries, key = data.get("models"), "name"
    else:
        entries, key = data.get("data"), "id"
    if not isinstance(entries, list):
        return None
    models = [e[key] for e in entries if isinstance(e, dict) and isinstance(e.get(key), str)]
    return Detected(provider, url, models)


def choose(found: list[Detected]) -> Detected | None:
    """The first server that has a model to talk to."""
    for detected in found:
        if detected.models:
            return detected
    return None


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
