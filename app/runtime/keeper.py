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

The keeper is handed what it uses: the pair lock and the run slots it refreshes, and, with an
external Redis, `wake_pair` (start a pair's consumer) and `sweep_orphans` (`Runtime.recover`
for dead owners).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import redis.asyncio as aioredis

from app.core.background import Ticker, cancel_and_wait
from app.core.settings import Settings
from app.memory import keys

if TYPE_CHECKING:
    from app.runtime.markers import PairLocks
    from app.runtime.slots import LocalSlots

log = logging.getLogger(__name__)

HEARTBEAT_PERIODS_TO_LIVE = 3


class Keeper:
    def __init__(self, *, redis: aioredis.Redis, settings: Settings, instance_id: str,
                 locks: PairLocks, slots: LocalSlots,
                 wake_pair: Callable[[str], None] | None = None,
                 sweep_orphans: Callable[[], Awaitable[object]] | None = None) -> None:
        self.redis = redis
        self.settings = settings
        self.instance_id = instance_id
        self.locks = locks
        self.slots = slots
        # With an external Redis: start the consumer of a pair another process accepted
        # input for; recover the turns of processes whose heartbeat has gone.
        self.wake_pair = wake_pair
        self.sweep_orphans = sweep_orphans
        self.tickers: list[Ticker[Any]] = []
        self._listener: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self.beat()
        settings = self.settings
        steps: list[tuple[str, Callable[[], Awaitable[Any]], float]] = [
            ("heartbeat", self.beat, settings.heartbeat_seconds),
            ("marker-refresh", self.refresh_markers, settings.turn_marker_refresh_seconds)]
        if self.sweep_orphans is not None:
            steps.append(("orphan-sweep", self.sweep_orphans,
                          settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE))
        if self.wake_pair is not None:
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
            await self.redis.delete(keys.heartbeat(self.instance_id))

    async def beat(self) -> None:
        settings = self.settings
        ttl = max(1, int(settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE))
        await self.redis.set(keys.heartbeat(self.instance_id), "alive", ex=ttl)

    async def refresh_markers(self) -> None:
        await self.locks.refresh_held()
        await self.slots.refresh()

    async def _wake_loop(self) -> None:
        assert self.wake_pair is not None
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.wake_channel())
        try:
            async for item in pubsub.listen():
                pair = item["data"]
                if isinstance(pair, str):
                    self.wake_pair(pair)
        finally:
            await pubsub.aclose()
