"""The process's housekeeping loops: each periodic one a `Ticker`, the wake listener a kept
task; all cancelled and awaited on shutdown.

- heartbeat: ``heartbeat:{instance}`` is set every `heartbeat_seconds` with a TTL of three
  periods; a marker or turn whose owner has no heartbeat is stale;
- marker refresh: every `turn_marker_refresh_seconds` each marker this process holds gets
  its TTL back (compare-and-expire), so only a turn nobody runs hits the emergency brake;
  run-slot leases (multi-process mode) are extended in the same beat;
- with an external Redis: a wake listener (pub/sub) that starts the consumer of a pair
  another process accepted input for, and an orphan sweep that recovers the turns of
  processes that lost their heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis

from app.core.background import Ticker, cancel_and_wait
from app.memory import keys
from app.runtime.recovery import RecoveryReport, recover

if TYPE_CHECKING:
    from app.runtime.runtime import Runtime

log = logging.getLogger(__name__)

HEARTBEAT_PERIODS_TO_LIVE = 3


class Keeper:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.tickers: list[Ticker[Any]] = []
        self._listener: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.beat()
        settings = self.runtime.settings
        steps: list[tuple[str, Callable[[], Awaitable[Any]], float]] = [
            ("heartbeat", self.beat, settings.heartbeat_seconds),
            ("marker-refresh", self.refresh_markers, settings.turn_marker_refresh_seconds)]
        if self.runtime.distributed:
            steps.append(("orphan-sweep", self.sweep,
                          settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE))
            self._listener = asyncio.create_task(self._wake_loop(), name="wake-listener")
        # Each step first runs one period after the start (the heartbeat was just written); a
        # failed step is retried the next period.
        self.tickers = [Ticker(name, step, interval=seconds, first_delay=seconds, logger=log)
                        for name, step, seconds in steps]
        for ticker in self.tickers:
            await ticker.start()

    async def stop(self) -> None:
        for ticker in self.tickers:
            await ticker.stop()
        if self._listener is not None:
            await cancel_and_wait([self._listener])
            self._listener = None
        with contextlib.suppress(aioredis.RedisError, OSError):
            await self.runtime.redis.delete(keys.heartbeat(self.runtime.instance_id))

    async def beat(self) -> None:
        settings = self.runtime.settings
        ttl = max(1, int(settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE))
        await self.runtime.redis.set(keys.heartbeat(self.runtime.instance_id), "alive", ex=ttl)

    async def refresh_markers(self) -> None:
        await self.runtime.locks.refresh_held()
        await self.runtime.slots.refresh()

    async def sweep(self) -> RecoveryReport:
        """Recover the turns of processes whose heartbeat has gone."""
        return await recover(self.runtime, only_dead_owners=True)

    async def _wake_loop(self) -> None:
        pubsub = self.runtime.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.wake_channel())
        try:
            async for item in pubsub.listen():
                pair = item["data"]
                if isinstance(pair, str):
                    self.runtime.notify(pair)
        finally:
            await pubsub.aclose()
