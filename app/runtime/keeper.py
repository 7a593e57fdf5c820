"""The process's housekeeping loops, each a kept task cancelled on shutdown.

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
from typing import TYPE_CHECKING

import redis.asyncio as aioredis

from app.core.background import cancel_and_wait
from app.memory import keys
from app.runtime.recovery import recover

if TYPE_CHECKING:
    from app.runtime.runtime import Runtime

log = logging.getLogger(__name__)

HEARTBEAT_PERIODS_TO_LIVE = 3


class Keeper:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        await self.beat()
        loops = [("heartbeat", self._heartbeat_loop), ("marker-refresh", self._refresh_loop)]
        if self.runtime.distributed:
            loops += [("wake-listener", self._wake_loop), ("orphan-sweep", self._sweep_loop)]
        self._tasks = [asyncio.create_task(fn(), name=name) for name, fn in loops]

    async def stop(self) -> None:
        await cancel_and_wait(self._tasks)
        with contextlib.suppress(aioredis.RedisError, OSError):
            await self.runtime.redis.delete(keys.heartbeat(self.runtime.instance_id))

    async def beat(self) -> None:
        settings = self.runtime.settings
        ttl = max(1, int(settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE))
        await self.runtime.redis.set(keys.heartbeat(self.runtime.instance_id), "alive", ex=ttl)

    async def refresh_markers(self) -> None:
        await self.runtime.locks.refresh_held()
        await self.runtime.slots.refresh()

    async def _heartbeat_loop(self) -> None:
        await self._every(self.runtime.settings.heartbeat_seconds, self.beat)

    async def _refresh_loop(self) -> None:
        await self._every(self.runtime.settings.turn_marker_refresh_seconds,
                          self.refresh_markers)

    async def _sweep_loop(self) -> None:
        async def sweep() -> None:
            await recover(self.runtime, only_dead_owners=True)

        await self._every(self.runtime.settings.heartbeat_seconds * HEARTBEAT_PERIODS_TO_LIVE,
                          sweep)

    async def _every(self, seconds: float, action: object) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await action()  # type: ignore[operator]
            except (aioredis.RedisError, OSError):
                log.exception("housekeeping step failed; next period retries")

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
