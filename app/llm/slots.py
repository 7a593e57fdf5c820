"""How many requests the model server serves at once (issue 36): its slots.

`ServerSlots.of(provider)` is what the server states — llama.cpp's `/props` `total_slots`
(`--parallel`) — else the setting `model_concurrency`, which states it for a server that does
not say (Ollama: its `OLLAMA_NUM_PARALLEL`; vLLM: `max_num_seqs`; neither is in any answer of
theirs). The gateway holds at most that many calls in flight per provider, and the pipeline
runs calls that do not depend on each other at once only where it is more than one: with one
slot a second request only queues at the server and takes the first one's time from it.

What the server said is kept for `model_metadata_ttl`, also when it said nothing (per
provider object, as the window is: a switch starts afresh). A server that cannot be asked
right now is not the slots' business: the last answer, else the setting, serves, and the
call itself meets the error.
"""

from __future__ import annotations

import asyncio
import logging
import time

from app.core import log as logctx
from app.core.settings import Settings
from app.llm.errors import ModelError
from app.llm.providers import Provider

log = logging.getLogger(__name__)


class ServerSlots:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # provider id -> (slots the server stated, or None when it does not say; asked at)
        self._said: dict[int, tuple[int | None, float]] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    def known(self, provider: Provider) -> int:
        """The slots as far as known without asking: the server's last answer, else the
        setting."""
        said = self._said.get(id(provider))
        return (said[0] if said else None) or self.settings.model_concurrency

    async def of(self, provider: Provider) -> int:
        """The provider's slots: what its server says (asked once per `model_metadata_ttl`),
        else `model_concurrency`."""
        if provider.offline:
            return self.settings.model_concurrency
        key = id(provider)
        if self._fresh(key):
            return self.known(provider)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if self._fresh(key):
                return self.known(provider)
            try:
                stated = await provider.parallel_slots()
            except ModelError as exc:
                log.info(
                    "model server slots unknown for now",
                    extra=logctx.fields(
                        provider=provider.name, error=exc.code, slots=self.known(provider)
                    ),
                )
                return self.known(provider)
            self._said[key] = (stated, time.monotonic())
        log.info(
            "model server slots",
            extra=logctx.fields(
                provider=provider.name,
                slots=self.known(provider),
                source="server" if stated else "model_concurrency",
            ),
        )
        return self.known(provider)

    def _fresh(self, key: int) -> bool:
        said = self._said.get(key)
        return said is not None and time.monotonic() - said[1] < self.settings.model_metadata_ttl
